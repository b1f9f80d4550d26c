//go:build !linux

package mmoclient

import "errors"

func readPassword(string) (string, error) {
	return "", errors.New("give the password as the last argument (prompting is supported on Linux)")
}
