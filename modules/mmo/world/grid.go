package world

import "math"

// maxGridCells bounds the grid per axis, so that a tiny interest radius in a
// large area cannot make the grid huge: cells then grow wider than the radius,
// which a query handles (it computes the cells its circle overlaps).
const maxGridCells = 256

// grid is a uniform grid over the area. Invariant: a character c is
// cells[c.cell][c.slot], and c.cell is the cell of its position.
type grid struct {
	cols, rows int
	size       float64 // cell width and height, ≥ the interest radius
	cells      [][]*character
}

func (g *grid) init(width, height, radius float64) {
	g.size = max(radius, width/maxGridCells, height/maxGridCells)
	g.cols = clampInt(int(math.Ceil(width/g.size)), 1, maxGridCells)
	g.rows = clampInt(int(math.Ceil(height/g.size)), 1, maxGridCells)
	g.cells = make([][]*character, g.cols*g.rows)
}

func clampInt(v, lo, hi int) int { return min(max(v, lo), hi) }

// col and row of a coordinate; positions are clamped to the area, and the far
// edge (x = width) falls in the last cell.
func (g *grid) col(x float64) int { return clampInt(int(x/g.size), 0, g.cols-1) }
func (g *grid) row(y float64) int { return clampInt(int(y/g.size), 0, g.rows-1) }

func (g *grid) cellOf(x, y float64) int { return g.row(y)*g.cols + g.col(x) }

func (g *grid) add(c *character) {
	c.cell = g.cellOf(c.x, c.y)
	c.slot = len(g.cells[c.cell])
	g.cells[c.cell] = append(g.cells[c.cell], c)
}

func (g *grid) remove(c *character) {
	cell := g.cells[c.cell]
	last := len(cell) - 1
	cell[c.slot] = cell[last]
	cell[c.slot].slot = c.slot
	cell[last] = nil
	g.cells[c.cell] = cell[:last]
}

// move re-files c after its position changed.
func (g *grid) move(c *character) {
	if g.cellOf(c.x, c.y) == c.cell {
		return
	}
	g.remove(c)
	g.add(c)
}

// withinKeys is within for Replicate: it appends id<<32 | index of each
// character found, a key that sorts by ID with the fast ordered sort and
// leads back to the character through World.chars.
func (g *grid) withinKeys(dst []uint64, x, y, r float64) []uint64 {
	c0, c1 := g.col(x-r), g.col(x+r)
	r0, r1 := g.row(y-r), g.row(y+r)
	r2 := r * r
	for row := r0; row <= r1; row++ {
		for col := c0; col <= c1; col++ {
			for _, c := range g.cells[row*g.cols+col] {
				if dx, dy := c.x-x, c.y-y; dx*dx+dy*dy <= r2 {
					dst = append(dst, uint64(c.id)<<32|uint64(uint32(c.index)))
				}
			}
		}
	}
	return dst
}

// within appends to dst every character at most r from (x, y), itself
// included if it is one, and returns dst.
func (g *grid) within(dst []*character, x, y, r float64) []*character {
	c0, c1 := g.col(x-r), g.col(x+r)
	r0, r1 := g.row(y-r), g.row(y+r)
	r2 := r * r
	for row := r0; row <= r1; row++ {
		for col := c0; col <= c1; col++ {
			for _, c := range g.cells[row*g.cols+col] {
				if dx, dy := c.x-x, c.y-y; dx*dx+dy*dy <= r2 {
					dst = append(dst, c)
				}
			}
		}
	}
	return dst
}
