package deathmatch

import "github.com/sparkhost/sparkhost/plugin"

// The module's metrics (plugin.Manifest.Metrics): the server exports them as
// sparkhost_deathmatch_<name>. Counters count since the module's process
// started.
const (
	metricPlayers = "players"
	metricKills   = "kills_total"
)

var metricSpecs = []plugin.MetricSpec{
	{Name: metricPlayers, Kind: plugin.Gauge, Help: "Players in the deathmatch game."},
	{Name: metricKills, Kind: plugin.Counter, Help: "Kills, suicides and team kills included."},
}
