//go:build !linux

package main

import (
	"os"
	"syscall"
)

// procsSupported: process mode (SIGSTOP/SIGCONT, Pdeathsig) is Linux only.
const procsSupported = false

var sigStop, sigCont, sigTerm = os.Kill, os.Kill, os.Interrupt // never sent: validate refuses -procs

func workerSysProcAttr() *syscall.SysProcAttr { return nil }
