package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/aimtheory/aim/cmd/aim/internal/output"
)

// exitInterrupted is the exit status of a command stopped by SIGINT or SIGTERM (128 + SIGINT).
const exitInterrupted = 130

// stopsEarly reports whether the command of args stops on SIGINT or SIGTERM by writing the
// rows it has finished (a job that takes Env.Context): aim se, amp, gd, erm, smi se and smi amp.
func stopsEarly(args []string) bool {
	switch args[0] {
	case "se", "amp", "gd", "erm":
		return true
	case "smi":
		return len(args) > 1 && (args[1] == "amp" || args[1] == "se")
	}
	return false
}

// handleSignals returns the context of a command, cancelled at its first SIGINT or SIGTERM
// (signal.NotifyContext), and the function to call when the command returns.
//
// A command that stops early (stopsEarly) reads the cancellation and writes what it finished;
// a second signal then removes every temporary output file (output.RemoveAll) and exits at
// once with status 130. Any other command does that at the first signal. aim sweep is left to
// the default action of the signals: its journal keeps every finished run, and the next
// `aim sweep run` resumes and clears the temporaries of the killed one.
func handleSignals(parent context.Context, args []string, stderr io.Writer) (context.Context, func()) {
	if args[0] == "sweep" {
		return parent, func() {}
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	returned, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-ctx.Done():
		case <-returned:
			return
		}
		if parent.Err() != nil { // cancelled by the caller, not by a signal
			return
		}
		if !stopsEarly(args) {
			output.RemoveAll()
			os.Exit(exitInterrupted)
		}
		again := make(chan os.Signal, 1)
		signal.Notify(again, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(again)
		stop()
		fmt.Fprintf(stderr, "aim %s: interrupted: writing the finished rows (interrupt again to quit without them)\n", args[0])
		select {
		case <-again:
			output.RemoveAll()
			os.Exit(exitInterrupted)
		case <-returned:
		}
	}()
	return ctx, func() {
		close(returned)
		<-exited // before stop, whose cancellation is no signal
		stop()
	}
}
