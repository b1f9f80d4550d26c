package lua

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// concatLocal names the local that holds the budgeted concatenation. It is
// not a Lua identifier, so no script can name, read or assign it.
const concatLocal = "(concat)"

// maxNesting bounds how deep statements and expressions may nest: the
// compiler walks the tree recursively in Go, and so does the rewrite below
// (Lua's own parser stops at 200 as well).
const maxNesting = 1000

// compiled keeps the protos last compiled, by source hash and chunk name,
// so that a script running in many rooms (a Lua state each) is compiled
// once: gopher-lua's FunctionProto is read-only once compiled and meant to
// be shared among states (NewFunctionFromProto). Bounded: the oldest goes
// first.
var compiled struct {
	sync.Mutex
	byKey map[protoKey]*lua.FunctionProto
	order []protoKey
}

type protoKey struct{ hash, name string }

// maxCompiled bounds the protos kept.
const maxCompiled = 32

// compileShared is compileChunk through the cache; hash is the source's.
func compileShared(src []byte, name, hash string) (*lua.FunctionProto, error) {
	k := protoKey{hash, name}
	compiled.Lock()
	p := compiled.byKey[k]
	compiled.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := compileChunk(src, name)
	if err != nil {
		return nil, err
	}
	compiled.Lock()
	defer compiled.Unlock()
	if compiled.byKey == nil {
		compiled.byKey = make(map[protoKey]*lua.FunctionProto)
	}
	if _, ok := compiled.byKey[k]; !ok {
		if len(compiled.order) == maxCompiled {
			delete(compiled.byKey, compiled.order[0])
			compiled.order = slices.Delete(compiled.order, 0, 1)
		}
		compiled.byKey[k] = p
		compiled.order = append(compiled.order, k)
	}
	return p, nil
}

// compileChunk parses a script, rewrites every `..` into a call of the
// budgeted concatenation, and compiles it.
//
// Why rewrite: gopher-lua's OP_CONCAT joins its operands in Go without any
// limit, and one instruction can join up to ~250 operands, so
// `s = s..s..s..(…)` multiplies a string's size per instruction faster than
// the deadline (checked between instructions) can stop it. Rewritten, every
// concatenation goes through concatFunction, which checks the result's size
// before it allocates. A chain a..b..c stays one call with three operands,
// evaluated left to right as before; the chunk receives the function as its
// first vararg and keeps it in a local no source can name.
func compileChunk(src []byte, name string) (*lua.FunctionProto, error) {
	stmts, err := parse.Parse(bytes.NewReader(src), name)
	if err != nil {
		var pe *parse.Error
		if errors.As(err, &pe) {
			msg := strings.TrimSpace(pe.Message)
			if pe.Token != "" {
				msg = fmt.Sprintf("%s near '%s'", msg, pe.Token)
			}
			return nil, &syntaxError{line: pe.Pos.Line, msg: msg}
		}
		return nil, err
	}
	rw := concatRewriter{}
	rw.stmts(stmts)
	if rw.err != nil {
		return nil, rw.err
	}
	hidden := &ast.LocalAssignStmt{Names: []string{concatLocal}, Exprs: []ast.Expr{&ast.Comma3Expr{}}}
	hidden.SetLine(1)
	hidden.SetLastLine(1)
	stmts = append([]ast.Stmt{hidden}, stmts...)
	proto, err := lua.Compile(stmts, name)
	if err != nil {
		var ce *lua.CompileError
		if errors.As(err, &ce) {
			return nil, &syntaxError{line: ce.Line, msg: ce.Message}
		}
		return nil, err
	}
	return proto, nil
}

// syntaxError is a script that does not compile.
type syntaxError struct {
	line int
	msg  string
}

func (e *syntaxError) Error() string { return e.msg }

type concatRewriter struct {
	depth int
	err   error
}

func (r *concatRewriter) enter(line int) bool {
	r.depth++
	if r.depth > maxNesting && r.err == nil {
		r.err = &syntaxError{line: line, msg: fmt.Sprintf("code nested more than %d levels deep", maxNesting)}
	}
	return r.err == nil
}

func (r *concatRewriter) leave() { r.depth-- }

func (r *concatRewriter) stmts(list []ast.Stmt) {
	for _, s := range list {
		r.stmt(s)
	}
}

func (r *concatRewriter) exprs(list []ast.Expr) {
	for i, e := range list {
		list[i] = r.expr(e)
	}
}

func (r *concatRewriter) stmt(s ast.Stmt) {
	if !r.enter(s.Line()) {
		return
	}
	defer r.leave()
	switch s := s.(type) {
	case *ast.AssignStmt:
		r.exprs(s.Lhs)
		r.exprs(s.Rhs)
	case *ast.LocalAssignStmt:
		r.exprs(s.Exprs)
	case *ast.FuncCallStmt:
		s.Expr = r.expr(s.Expr)
	case *ast.DoBlockStmt:
		r.stmts(s.Stmts)
	case *ast.WhileStmt:
		s.Condition = r.expr(s.Condition)
		r.stmts(s.Stmts)
	case *ast.RepeatStmt:
		s.Condition = r.expr(s.Condition)
		r.stmts(s.Stmts)
	case *ast.IfStmt:
		s.Condition = r.expr(s.Condition)
		r.stmts(s.Then)
		r.stmts(s.Else)
	case *ast.NumberForStmt:
		s.Init = r.expr(s.Init)
		s.Limit = r.expr(s.Limit)
		s.Step = r.expr(s.Step)
		r.stmts(s.Stmts)
	case *ast.GenericForStmt:
		r.exprs(s.Exprs)
		r.stmts(s.Stmts)
	case *ast.FuncDefStmt:
		if s.Name != nil {
			s.Name.Func = r.expr(s.Name.Func)
			s.Name.Receiver = r.expr(s.Name.Receiver)
		}
		r.function(s.Func)
	case *ast.ReturnStmt:
		r.exprs(s.Exprs)
	}
}

func (r *concatRewriter) function(f *ast.FunctionExpr) {
	if f != nil {
		r.stmts(f.Stmts)
	}
}

func (r *concatRewriter) expr(e ast.Expr) ast.Expr {
	if e == nil || !r.enter(e.Line()) {
		return e
	}
	defer r.leave()
	switch e := e.(type) {
	case *ast.StringConcatOpExpr:
		return r.concat(e)
	case *ast.AttrGetExpr:
		e.Object = r.expr(e.Object)
		e.Key = r.expr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			f.Key = r.expr(f.Key)
			f.Value = r.expr(f.Value)
		}
	case *ast.FuncCallExpr:
		e.Func = r.expr(e.Func)
		e.Receiver = r.expr(e.Receiver)
		r.exprs(e.Args)
	case *ast.LogicalOpExpr:
		e.Lhs = r.expr(e.Lhs)
		e.Rhs = r.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		e.Lhs = r.expr(e.Lhs)
		e.Rhs = r.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		e.Lhs = r.expr(e.Lhs)
		e.Rhs = r.expr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		e.Expr = r.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		e.Expr = r.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		e.Expr = r.expr(e.Expr)
	case *ast.FunctionExpr:
		r.function(e)
	}
	return e
}

// concat flattens a right-nested chain a..(b..c) — what the parser builds
// for a..b..c, and what one OP_CONCAT would join — into one call.
func (r *concatRewriter) concat(e *ast.StringConcatOpExpr) ast.Expr {
	var ops []ast.Expr
	var cur ast.Expr = e
	for {
		c, ok := cur.(*ast.StringConcatOpExpr)
		if !ok {
			break
		}
		ops = append(ops, c.Lhs)
		cur = c.Rhs
	}
	ops = append(ops, cur)
	for i, op := range ops {
		op = r.expr(op)
		// An operand is one value, as in `(f())`: a call or `...` as the
		// last argument would otherwise pass all of its values.
		switch op := op.(type) {
		case *ast.FuncCallExpr:
			op.AdjustRet = true
		case *ast.Comma3Expr:
			op.AdjustRet = true
		}
		ops[i] = op
	}
	fn := &ast.IdentExpr{Value: concatLocal}
	fn.SetLine(e.Line())
	fn.SetLastLine(e.LastLine())
	call := &ast.FuncCallExpr{Func: fn, Args: ops, AdjustRet: true}
	call.SetLine(e.Line())
	call.SetLastLine(e.LastLine())
	return call
}
