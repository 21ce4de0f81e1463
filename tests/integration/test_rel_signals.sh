#!/bin/sh
# The application's own SIGTERM, SIGINT and SIGUSR1 handlers keep working
# while calls are recorded (each of 20 signals of each kind reaches the
# handler, results unchanged); without a handler, SIGTERM still kills the
# process by SIGTERM (status 143) and the ops before it are readable.
. "$(dirname "$0")/rel_lib.sh"
run_both signals 0 signals 20
grep -qx 'signals term=20 int=20 usr1=20' "$T/signals.shim" ||
    fail "handlers: $(cat "$T/signals.shim")"
for f in "$T"/traces/job/*.p3d; do want_ops "$f" 500; done
rm -rf "$T/traces"
run_both sigterm 143 sigterm 50
grep -q survived "$T/sigterm.shim" && fail "SIGTERM did not kill"
for f in "$T"/traces/job/*.p3d; do
    [ -e "$f" ] || fail "no trace file"
    want_ops "$f" 50
done
