package supervisor

import "github.com/sparkhost/sparkhost/module"

// Funcs is an in-process Go module made of functions. It takes the same path
// as every other module (manifest, schemas, inbox, Step on the game thread)
// without a script runtime or a process boundary: tests and benchmarks use it
// as the baseline the Lua and plugin runtimes are measured against.
type Funcs struct {
	Manifest  module.Manifest
	OnLoad    func(h module.Host) error
	OnEvent   func(h module.Host, ev *module.Event)
	OnTick    func(h module.Host, t module.Tick)
	OnCommand func(h module.Host, name string, args []string) (string, error)
	OnUnload  func()

	host module.Host
}

var _ module.Module = (*Funcs)(nil)

// Load implements Module.
func (f *Funcs) Load(h module.Host) (module.Manifest, error) {
	f.host = h
	if f.OnLoad != nil {
		if err := f.OnLoad(h); err != nil {
			return module.Manifest{}, err
		}
	}
	return f.Manifest, nil
}

// Step implements Module.
func (f *Funcs) Step(t module.Tick, events []module.Event) error {
	if f.OnEvent != nil {
		for i := range events {
			f.OnEvent(f.host, &events[i])
		}
	}
	if f.OnTick != nil {
		f.OnTick(f.host, t)
	}
	return nil
}

// Command implements Module.
func (f *Funcs) Command(name string, args []string) (string, error) {
	if f.OnCommand == nil {
		return "", nil
	}
	return f.OnCommand(f.host, name, args)
}

// Unload implements Module.
func (f *Funcs) Unload() error {
	if f.OnUnload != nil {
		f.OnUnload()
	}
	return nil
}
