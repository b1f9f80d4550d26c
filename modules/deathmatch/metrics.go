package deathmatch

import "github.com/sparkhost/sparkhost/module"

// The module's metrics (plugin.Manifest.Metrics): the server exports them as
// sparkhost_deathmatch_<name>. Counters count since the module's process
// started.
const (
	metricPlayers = "players"
	metricKills   = "kills_total"
)

var metricSpecs = []module.MetricSpec{
	{Name: metricPlayers, Kind: module.MetricGauge, Help: "Players in the deathmatch game."},
	{Name: metricKills, Kind: module.MetricCounter, Help: "Kills, suicides and team kills included."},
}
