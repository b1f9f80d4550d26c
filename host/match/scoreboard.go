package match

import (
	"math"
	"slices"

	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// scoreboard holds one row per present player. Its totals span a match (all
// its rounds); roundScore is the part scored in the current round, which is
// what the score limit is measured against.
type scoreboard struct {
	rows map[uint32]*row
}

type row struct {
	gamemsg.ScoreEntry
	roundScore int32
}

func newScoreboard() scoreboard { return scoreboard{rows: make(map[uint32]*row)} }

// join adds a zero row for id and reports whether it was absent.
func (b *scoreboard) join(id uint32) bool {
	if _, ok := b.rows[id]; ok {
		return false
	}
	b.rows[id] = &row{ScoreEntry: gamemsg.ScoreEntry{Client: id}}
	return true
}

// leave removes id's row and reports whether it was present.
func (b *scoreboard) leave(id uint32) bool {
	if _, ok := b.rows[id]; !ok {
		return false
	}
	delete(b.rows, id)
	return true
}

// add adds to id's row, saturating at the int32 bounds. It returns the row, or
// nil for an absent player, and whether anything changed.
func (b *scoreboard) add(id uint32, score, kills, deaths int32) (*row, bool) {
	r := b.rows[id]
	if r == nil || score == 0 && kills == 0 && deaths == 0 {
		return r, false
	}
	r.Score = satAdd(r.Score, score)
	r.Kills = satAdd(r.Kills, kills)
	r.Deaths = satAdd(r.Deaths, deaths)
	r.roundScore = satAdd(r.roundScore, score)
	return r, true
}

// reset zeroes every row and reports whether any value changed.
func (b *scoreboard) reset() bool {
	changed := false
	for _, r := range b.rows {
		if r.ScoreEntry != (gamemsg.ScoreEntry{Client: r.Client}) {
			changed = true
		}
		*r = row{ScoreEntry: gamemsg.ScoreEntry{Client: r.Client}}
	}
	return changed
}

// resetRound starts a new round's count toward the score limit.
func (b *scoreboard) resetRound() {
	for _, r := range b.rows {
		r.roundScore = 0
	}
}

// sorted returns a new slice of the rows by score, highest first, then by id.
func (b *scoreboard) sorted() []gamemsg.ScoreEntry {
	out := make([]gamemsg.ScoreEntry, 0, len(b.rows))
	for _, r := range b.rows {
		out = append(out, r.ScoreEntry)
	}
	slices.SortFunc(out, func(x, y gamemsg.ScoreEntry) int {
		switch {
		case x.Score != y.Score:
			if x.Score > y.Score {
				return -1
			}
			return 1
		case x.Client < y.Client:
			return -1
		case x.Client > y.Client:
			return 1
		}
		return 0
	})
	return out
}

// winner returns the highest score and its player, the lowest id on a tie,
// or 0, 0 when nobody is present.
func (b *scoreboard) winner() (id uint32, score int32) {
	first := true
	for _, r := range b.rows {
		if first || r.Score > score || r.Score == score && r.Client < id {
			id, score, first = r.Client, r.Score, false
		}
	}
	return id, score
}

func satAdd(a, b int32) int32 {
	s := int64(a) + int64(b)
	return int32(min(max(s, math.MinInt32), math.MaxInt32))
}
