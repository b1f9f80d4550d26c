// Package kvfile is the small persistent key-value store every module gets
// (Lua: spark.kv; Go plugins: Host.KV): one JSON file per module, rewritten
// atomically on every change.
package kvfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/sparkhost/sparkhost/internal/atomicfile"
)

// KV limits: the store is for small facts (settings, high scores), not a
// database; modules that persist real data (the MMO) bring an embedded DB.
const (
	MaxKVKey   = 256
	MaxKVValue = 64 << 10
	MaxKVTotal = 1 << 20
)

// ErrKVFull is returned when a write would exceed the store's limits.
var ErrKVFull = errors.New("module kv: store full (1 MiB) or entry too large")

// Store is a KV kept in one JSON file, rewritten atomically on every change.
type Store struct {
	mu    sync.Mutex
	path  string
	data  map[string]string
	total int
}

// openKV loads (or starts) the store at path.
func Open(path string) (*Store, error) {
	kv := &Store{path: path, data: make(map[string]string)}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return kv, nil
	case err != nil:
		return nil, fmt.Errorf("module kv: %w", err)
	}
	if err := json.Unmarshal(b, &kv.data); err != nil {
		return nil, fmt.Errorf("module kv %s is damaged (%v); move it away to start empty", path, err)
	}
	for k, v := range kv.data {
		kv.total += len(k) + len(v)
	}
	return kv, nil
}

func (kv *Store) Get(key string) (string, bool) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	v, ok := kv.data[key]
	return v, ok
}

func (kv *Store) Keys() []string {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	keys := make([]string, 0, len(kv.data))
	for k := range kv.data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (kv *Store) Set(key, value string) error {
	if key == "" || len(key) > MaxKVKey || len(value) > MaxKVValue {
		return ErrKVFull
	}
	kv.mu.Lock()
	defer kv.mu.Unlock()
	old, had := kv.data[key]
	total := kv.total + len(value)
	if had {
		total -= len(old)
	} else {
		total += len(key)
	}
	if total > MaxKVTotal {
		return ErrKVFull
	}
	kv.data[key] = value
	if err := kv.save(); err != nil {
		if had {
			kv.data[key] = old
		} else {
			delete(kv.data, key)
		}
		return err
	}
	kv.total = total
	return nil
}

func (kv *Store) Delete(key string) error {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	old, had := kv.data[key]
	if !had {
		return nil
	}
	delete(kv.data, key)
	if err := kv.save(); err != nil {
		kv.data[key] = old
		return err
	}
	kv.total -= len(key) + len(old)
	return nil
}

// save rewrites the whole store atomically, so a crash leaves either the old
// or the new store.
func (kv *Store) save() error {
	b, err := json.Marshal(kv.data)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(kv.path, b); err != nil {
		return fmt.Errorf("module kv: %w", err)
	}
	return nil
}
