#!/bin/sh
# Network transfers in flight at a hang, from NCCL's proxy events (issue
# 24), over the fake NCCL, which sends a ProxyOp and its first step for
# every transfer while the op runs (a receive waits for the peer's data,
# a send for the receiver's buffer) and stops them when it completes.
# A simulated Megatron job (TP 2, PP 2, DP 2) whose rank 5 never issues
# its 7th PP op, with P3D_GPU_TIMING=plugin, P3D_HANG_TIMEOUT=1:
#   on       P3D_PLUGIN_PROXY=1: rank 1 (its PP peer) reports its Send:
#            the watchdog's report
#            on stderr lists the transfers in flight, all on the PP
#            communicator of the pending op (finished ones were freed, not
#            kept), a send to comm rank 1 waiting for the receiver's
#            buffer; the trace has them as "proxy:" notes; p3d-analyze's
#            text and --json (hang.network_transfers) name the peer as
#            global rank 5 on the PP communicator;
#   off      P3D_PLUGIN_PROXY unset (the default) and =0: no transfer in
#            the reports, an empty hang.network_transfers.
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
[ -x "$P3D_BUILD/p3d-sim" ] || { echo "no $P3D_BUILD/p3d-sim"; exit 1; }
[ -f "$P3D_BUILD/libp3dtrace.so" ] || { echo "skip: no shim"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/p3dproxy.XXXXXX")
trap 'rm -rf "$T"' EXIT
python3 - "$P3D_BUILD" "$T" "$P3D_SRC/tests/tools" <<'PY'
import json, os, re, subprocess, sys, time
build, out, tools = sys.argv[1:4]
sys.path.insert(0, tools)
import p3d_trace
from p3d_proc import stop_children
fail = []


def run(name, extra):
    """The hung job; stopped once rank 1 has reported (or after 120 s)."""
    env = dict(os.environ, P3D_HANG_TIMEOUT="1", P3D_QUIET="1",
               P3D_GPU_TIMING="plugin")
    env.pop("P3D_PLUGIN_PROXY", None)
    env.update(extra)
    err = f"{out}/{name}.err"
    cmd = [f"{build}/p3d-sim", "--tp", "2", "--pp", "2", "--dp", "2", "-m",
           "4", "--iters", "1", "--hang", "5:pp:7", "--fwd-ms", "1",
           "--bwd-ms", "1", "--opt-ms", "1", "--timeout", "120", "--grace",
           "20", "--out", out, "--job-id", name, "--shim",
           f"{build}/libp3dtrace.so", "--quiet"]
    sim = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                           stderr=open(err, "w"))
    t_end = time.time() + 120
    while sim.poll() is None and time.time() < t_end:
        time.sleep(0.1)
        text = open(err).read()
        # rank 1's whole report: its HANG? line and what follows it
        if re.search(r"HANG\? rank 1 .*\n(p3dtrace:   .*\n)*"
                     r"p3dtrace:   call site", text) or \
                re.search(r"HANG\? rank 1 .*\n(p3dtrace:   .*\n)*"
                          r"p3dtrace: HANG\?", text):
            time.sleep(0.5)
            break
    stop_children(sim.pid)
    sim.wait()
    return open(err).read()

def report_of(text, rank):
    """The lines of rank's first watchdog report."""
    m = re.search(r"(p3dtrace: HANG\? rank %d .*\n(p3dtrace:   .*\n)*)"
                  % rank, text)
    return m.group(1) if m else ""

def analyze(name):
    subprocess.run([f"{build}/p3d-analyze", "-q", "--json",
                    f"{out}/{name}.json", f"{out}/{name}"])
    txt = subprocess.run([f"{build}/p3d-analyze", f"{out}/{name}"],
                         capture_output=True, text=True).stdout
    return txt, json.load(open(f"{out}/{name}.json"))

# on
err = run("on", {"P3D_PLUGIN_PROXY": "1"})
rep = report_of(err, 1)
m = re.search(r"Send seq \d+ on comm 0x([0-9a-f]+)", rep)
px = re.findall(r"proxy: comm 0x([0-9a-f]+) (send to|receive from) comm "
                r"rank (\d+), channel \d+: .*", rep)
if not m:
    fail.append("on: rank 1 did not report its pending Send:\n" + err[-2000:])
else:
    pp = m.group(1)
    if not any(c == pp and d == "send to" and p == "1" for c, d, p in px):
        fail.append("on: no send to comm rank 1 on the PP comm in rank 1's "
                    "report:\n" + rep)
    if any(c != pp for c, _, _ in px):
        fail.append("on: transfers of other communicators (not freed?):\n"
                    + rep)
    if "waits for the receiver's buffer" not in rep:
        fail.append("on: the send's state is missing:\n" + rep)
    notes = [r["text"] for r in p3d_trace.read_dir(f"{out}/on")[1].records
             if r["type"] == "note" and r["text"].startswith("proxy: ")]
    if not notes or not all(("0x" + pp) in n for n in notes):
        fail.append("on: rank 1's trace notes %s" % notes)
    txt, js = analyze("on")
    want = "rank 1: send to rank 5 (comm rank 1 of PP 0x%s)" % pp
    if want not in txt:
        fail.append("on: the report lacks %r:\n%s" % (want, txt[-3000:]))
    nt = js["hang"]["network_transfers"]
    if not any(t["rank"] == 1 and t["text"].startswith("send to rank 5 ")
               for t in nt):
        fail.append("on: hang.network_transfers %s" % nt)
    print("on: rank 1 reported %d transfer(s) on PP 0x%s; p3d-analyze "
          "names rank 5" % (len(px), pp))
# off: by default, and asked for
for name, extra in (("default", {}), ("off", {"P3D_PLUGIN_PROXY": "0"})):
    err = run(name, extra)
    if "HANG? rank 1 " not in err:
        fail.append("%s: rank 1 did not report:\n%s" % (name, err[-2000:]))
    if "proxy:" in err:
        fail.append("%s: transfers reported" % name)
    _, js = analyze(name)
    if js["hang"]["network_transfers"]:
        fail.append("%s: hang.network_transfers %s" %
                    (name, js["hang"]["network_transfers"]))
    print("%s: no transfers" % name)
if fail:
    sys.exit("FAIL: " + "\n".join(fail))
PY
