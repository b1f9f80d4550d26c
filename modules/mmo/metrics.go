package mmo

import "github.com/sparkhost/sparkhost/plugin"

// The module's metrics (plugin.Manifest.Metrics): the server exports them as
// sparkhost_mmo_<name>. Counters count since the module's process started.
const (
	metricLogins        = "logins_total"
	metricLoginFailures = "login_failures_total"
	metricRegistrations = "registrations_total"
	metricThrottled     = "throttled_total"
	metricInWorld       = "characters_in_world"
	metricOnline        = "accounts_online"
)

var metricSpecs = []plugin.MetricSpec{
	{Name: metricLogins, Kind: plugin.Counter, Help: "Successful logins."},
	{Name: metricLoginFailures, Kind: plugin.Counter, Help: "Logins refused for a wrong proof (bad password or unknown account)."},
	{Name: metricRegistrations, Kind: plugin.Counter, Help: "Accounts registered."},
	{Name: metricThrottled, Kind: plugin.Counter, Help: "Login attempts refused by throttling (too many failures for the account or the address)."},
	{Name: metricInWorld, Kind: plugin.Gauge, Help: "Characters in the world."},
	{Name: metricOnline, Kind: plugin.Gauge, Help: "Accounts logged in."},
}
