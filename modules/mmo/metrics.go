package mmo

import "github.com/sparkhost/sparkhost/module"

// The module's metrics (plugin.Manifest.Metrics): the server exports them as
// sparkhost_mmo_<name>. Counters count since the module's process started.
const (
	metricLogins         = "logins_total"
	metricLoginFailures  = "login_failures_total"
	metricRegistrations  = "registrations_total"
	metricThrottled      = "throttled_total"
	metricInWorld        = "characters_in_world"
	metricOnline         = "accounts_online"
	metricHandoffsOut    = "handoffs_out_total"
	metricHandoffsIn     = "handoffs_in_total"
	metricTicketsRefused = "tickets_refused_total"

	metricRegistrationsRefused = "registrations_refused_total"
	metricBannedLogins         = "banned_logins_total"
	metricVerifierUpgrades     = "verifier_upgrades_total"
)

var metricSpecs = []module.MetricSpec{
	{Name: metricLogins, Kind: module.MetricCounter, Help: "Successful logins."},
	{Name: metricLoginFailures, Kind: module.MetricCounter, Help: "Logins refused for a wrong proof (bad password or unknown account)."},
	{Name: metricRegistrations, Kind: module.MetricCounter, Help: "Accounts registered."},
	{Name: metricThrottled, Kind: module.MetricCounter, Help: "Login attempts refused by throttling (growing delays after failures of the account from the address, or of the address; the attempts per account shared by the addresses without a recent login of it)."},
	{Name: metricRegistrationsRefused, Kind: module.MetricCounter, Help: "Registrations refused by the per-address rate limit."},
	{Name: metricBannedLogins, Kind: module.MetricCounter, Help: "Logins with the right password refused because the account is banned."},
	{Name: metricVerifierUpgrades, Kind: module.MetricCounter, Help: "Accounts whose verifier was recomputed with the current iteration count at login."},
	{Name: metricInWorld, Kind: module.MetricGauge, Help: "Characters in the world."},
	{Name: metricOnline, Kind: module.MetricGauge, Help: "Accounts logged in."},
	{Name: metricHandoffsOut, Kind: module.MetricCounter, Help: "Characters handed over to a neighbouring area's server."},
	{Name: metricHandoffsIn, Kind: module.MetricCounter, Help: "Characters admitted from a neighbouring area by gateway ticket."},
	{Name: metricTicketsRefused, Kind: module.MetricCounter, Help: "Gateway tickets refused (invalid, expired, replayed, for another server or key, character elsewhere)."},
}
