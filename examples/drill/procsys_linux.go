package main

import "syscall"

// procsSupported: process mode needs SIGSTOP/SIGCONT and a worker that dies with its
// coordinator (Pdeathsig).
const procsSupported = true

var sigStop, sigCont, sigTerm = syscall.SIGSTOP, syscall.SIGCONT, syscall.SIGTERM

// workerSysProcAttr makes a worker process get SIGKILL when the coordinator dies, so
// that no frozen worker outlives a killed drill.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
