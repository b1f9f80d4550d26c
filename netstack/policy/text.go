package policy

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode"
)

// parsed is bind text that passed the canonical-form check; nothing about the
// address range has been judged yet.
type parsed struct {
	addr       uint32 // host address, big-endian order (first octet in the top byte)
	hasPrefix  bool
	bits       int    // prefix length; only when hasPrefix; 99 stands for "too many digits"
	prefixText string // the digits after '/', for messages
}

// parseText enforces the one canonical spelling §11 allows: four decimal octets
// 0..255 without leading zeros, separated by single dots, optionally followed by
// '/' and a decimal prefix length without sign or leading zero. It is written by
// hand because the standard parsers either accept forms §11 forbids (inet_aton's
// 127.1, 0x7f.0.0.1 and 0177.0.0.1 as understood by many tools) or reject them with
// messages that do not say what to write instead. netip is used only to recognise
// IPv6 and host:port text so that those get their own, clearer error.
func parseText(input string) (parsed, error) {
	if strings.IndexFunc(input, unicode.IsSpace) >= 0 {
		return parsed{}, reject(input, ErrNotCanonical, "contains white space", "write it as e.g. 127.0.0.1, without spaces")
	}
	addrText, prefixText, hasPrefix := strings.Cut(input, "/")
	if err := classifyNonDecimal(input, addrText); err != nil {
		return parsed{}, err
	}
	addr, err := parseOctets(input, addrText)
	if err != nil {
		return parsed{}, err
	}
	p := parsed{addr: addr, hasPrefix: hasPrefix, prefixText: prefixText}
	if hasPrefix {
		if p.bits, err = parsePrefix(input, prefixText); err != nil {
			return parsed{}, err
		}
	}
	return p, nil
}

const hintCanonical = "write canonical dotted-decimal IPv4 such as 127.0.0.1 or 192.168.1.20/24"

// classifyNonDecimal gives IPv6, host:port, hexadecimal and host-name text their
// specific errors. It returns nil for text made only of digits and dots, which
// parseOctets then judges.
func classifyNonDecimal(input, addrText string) error {
	if i := strings.IndexAny(addrText, ":[]"); i >= 0 {
		inner := strings.TrimSuffix(strings.TrimPrefix(addrText, "["), "]")
		if a, err := netip.ParseAddr(inner); err == nil && a.Is6() {
			if a.Is4In6() {
				return reject(input, ErrIPv6, "IPv4-mapped address",
					"write the IPv4 form "+a.Unmap().String()+" (IPv4 only)")
			}
			return reject(input, ErrIPv6, "", "sparkhost speaks IPv4 only; "+hintGeneric)
		}
		if ap, err := netip.ParseAddrPort(addrText); err == nil {
			if ap.Addr().Is4() {
				return reject(input, ErrNotCanonical, "contains a port",
					"give the address alone ("+ap.Addr().String()+"); the port is configured separately")
			}
			return reject(input, ErrIPv6, "", "sparkhost speaks IPv4 only; "+hintGeneric)
		}
		return reject(input, ErrNotCanonical, fmt.Sprintf("unexpected character %q", rune(addrText[i])), hintCanonical)
	}
	for _, label := range strings.Split(addrText, ".") {
		if len(label) >= 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X') {
			return reject(input, ErrNotCanonical, fmt.Sprintf("hexadecimal octet %q", label), hintCanonical)
		}
	}
	letters := false
	for i := 0; i < len(addrText); i++ {
		c := addrText[i]
		switch {
		case c >= '0' && c <= '9', c == '.':
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letters = true
		case c == '-':
			// A hyphen only makes sense in a host name; judged below.
		default:
			return reject(input, ErrNotCanonical, fmt.Sprintf("unexpected character %q", rune(c)), hintCanonical)
		}
	}
	if letters {
		return reject(input, ErrHostname, "",
			"write the IPv4 address itself, e.g. 127.0.0.1 (for \"localhost\") or 192.168.1.20/24")
	}
	if strings.ContainsRune(addrText, '-') {
		return reject(input, ErrNotCanonical, "unexpected character '-'", hintCanonical)
	}
	return nil
}

// parseOctets parses exactly four canonical decimal octets.
func parseOctets(input, addrText string) (uint32, error) {
	if addrText == "" {
		return 0, reject(input, ErrNotCanonical, "no address before the prefix", hintCanonical)
	}
	octets := strings.Split(addrText, ".")
	for i, o := range octets {
		if o != "" {
			continue
		}
		detail := "empty octet"
		switch {
		case i == len(octets)-1:
			detail = "trailing dot"
		case i == 0:
			detail = "leading dot"
		}
		return 0, reject(input, ErrNotCanonical, detail, hintCanonical)
	}
	if len(octets) != 4 {
		return 0, reject(input, ErrNotCanonical,
			fmt.Sprintf("%d octets, want 4 (shorthand like 127.1 is not allowed)", len(octets)), hintCanonical)
	}
	var addr uint32
	for _, o := range octets {
		if len(o) > 1 && o[0] == '0' {
			return 0, reject(input, ErrNotCanonical,
				fmt.Sprintf("octet %q has a leading zero (zero-padded and octal forms are not allowed)", o), hintCanonical)
		}
		v, ok := smallDecimal(o)
		if !ok || v > 255 {
			return 0, reject(input, ErrNotCanonical, fmt.Sprintf("octet %q is greater than 255", o), hintCanonical)
		}
		addr = addr<<8 | uint32(v)
	}
	return addr, nil
}

// parsePrefix parses the digits after '/'. A canonical but huge number is not a
// text error: it is returned as 99 so that the caller reports ErrPrefixRange.
func parsePrefix(input, text string) (int, error) {
	if text == "" {
		return 0, reject(input, ErrNotCanonical, "empty prefix after '/'", hintCanonical)
	}
	for i := 0; i < len(text); i++ {
		if text[i] < '0' || text[i] > '9' {
			return 0, reject(input, ErrNotCanonical,
				fmt.Sprintf("prefix %q is not a plain decimal number", "/"+text), hintCanonical)
		}
	}
	if len(text) > 1 && text[0] == '0' {
		return 0, reject(input, ErrNotCanonical, fmt.Sprintf("prefix %q has a leading zero", "/"+text), hintCanonical)
	}
	v, ok := smallDecimal(text)
	if !ok {
		return 99, nil
	}
	return v, nil
}

// smallDecimal converts one to three ASCII digits; longer text reports !ok.
func smallDecimal(s string) (int, bool) {
	if len(s) == 0 || len(s) > 3 {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		v = v*10 + int(s[i]-'0')
	}
	return v, true
}
