//go:build !linux

package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func readFile(path string, off, limit int64) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s is a folder; use list", path)
	}
	if limit <= 0 || limit > MaxRead {
		limit = MaxRead
	}
	buf := make([]byte, limit)
	n, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return &Result{Content: buf[:n], Size: fi.Size()}, nil
}

func writeFile(path string, content []byte) (*Result, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return nil, err
	}
	return &Result{Size: int64(len(content))}, nil
}

func listDir(path string) (*Result, error) {
	des, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	res := &Result{Entries: make([]Entry, 0, len(des))}
	for _, de := range des {
		e := Entry{Name: de.Name(), Dir: de.IsDir()}
		if fi, err := de.Info(); err == nil {
			e.Size, e.Mode, e.MTime = fi.Size(), fi.Mode().String(), fi.ModTime().Unix()
			if fi.Mode()&os.ModeSymlink != 0 {
				e.Link, _ = os.Readlink(filepath.Join(path, de.Name()))
			}
		}
		res.Entries = append(res.Entries, e)
	}
	return res, nil
}
