#!/bin/sh
# Runs a command that prints figures but records no machine of its own (an
# example, a test's --nocapture output, the fuzz smoke run) and saves what it
# printed under docs/results with the machine it ran on, so that the results
# pages can cite it (docs/gen_results.py and crates/cli/tests/docs_results.rs
# read the `Environment:` line: the CPU model as `lscpu` names it).
#
#   docs/record_run.sh docs/results/DATE-NAME.txt COMMAND [ARG...]
#
# The file: the command, the environment line (host, kernel, CPU model and
# count, whether a hypervisor is there, the load average at the start, the
# UTC date), everything the command wrote to stdout and stderr, the load
# average at the end and the exit status. The exit status is the command's.
set -u
[ $# -ge 2 ] || { echo "usage: $0 OUT.txt COMMAND [ARG...]" >&2; exit 2; }
out=$1
shift
model=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
cpus=$(nproc --all)
hyper=$(lscpu | sed -n 's/^Hypervisor vendor: *//p' | head -n 1)
load() { cut -d' ' -f1-3 /proc/loadavg; }
{
    echo "# $*"
    echo "Environment: host $(hostname), $(uname -srvm), CPU ${model:-unknown} ($cpus CPUs), vm ${hyper:-no}, load $(load) at start, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$out"
"$@" >>"$out" 2>&1
rc=$?
echo "# load $(load) at the end; exit status $rc" >>"$out"
exit $rc
