#!/usr/bin/env bash
# hack/html-report-test.sh RESULTS_DIR: the HTML acceptance report as a
# browser draws it (what the Go tests of the HTML cannot see). Debian's Chromium renders, headless and in
# a network namespace of its own (nothing it tries can leave the machine):
#   1. hack/html-fixture/run.json against its baseline: a port below its
#      floor. Against control.json (the same run with that port above
#      the floor) the screenshot must have one heat-map cell more of the
#      below-floor colour: the check can tell a red cell from none.
#   2. The bed's own results of this make test (guest bandwidth, memlock
#      and doctor, the MOFED restart), merged, against the guest run as
#      baseline (0 regressions): measured cells, not-measured cells and
#      the stall timeline drawn.
#   3. A fleet of 256 nodes × 8 rails with one bad port (the fleet page;
#      hack/tools/fleetfixture: the suite's own verdicts on simulated
#      probe outputs): the verdict element names the port's node and rail
#      before the matrix, and the first screen (1400×900) shows the
#      culprit banner and the port's two partners, each in its own colour;
#      against the same fleet with no bad port, that banner and those
#      partner cells are what is more (so the check can fail).
#   4. Every page made no request (Chromium's net log); a control page
#      with an outside image must be caught by the same check.
# Screenshots and pages stay in RESULTS_DIR/html.
set -euo pipefail
cd "$(dirname "$0")/.."
res=${1:?usage: hack/html-report-test.sh RESULTS_DIR}
out=$res/html
mkdir -p "$out"
command -v chromium >/dev/null || { echo "chromium is missing: run hack/install-deps.sh"; exit 1; }
go build -o "$out/rdmasuite" ./cmd/rdmasuite
(cd hack && go build -o "$out/pagecheck" ./tools/pagecheck)
check() { "$out/pagecheck" "$@"; }

# render NAME RC ARGS...: rdmasuite report --format html must exit RC.
render() {
  local name=$1 want=$2 rc=0
  shift 2
  "$out/rdmasuite" report "$@" --format html -o "$out/$name.html" || rc=$?
  [[ $rc == "$want" ]] || { echo "report $name exited $rc, want $want (the page and the exit code must agree)"; exit 1; }
}
# shoot NAME HEIGHT: screenshot and net log of $out/NAME.html.
shoot() {
  rm -rf "$out/profile"
  timeout 120 unshare --net chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --hide-scrollbars --user-data-dir="$out/profile" \
    --log-net-log="$out/$1.netlog.json" --window-size="1400,$2" --screenshot="$out/$1.png" "file://$(realpath "$out/$1.html")" \
    >"$out/$1.chromium.log" 2>&1 || { tail -5 "$out/$1.chromium.log"; echo "chromium failed on $1"; exit 1; }
  [[ -s $out/$1.png ]] || { echo "chromium wrote no screenshot of $1"; exit 1; }
}
red='#d73027' green='#1a9850' grey='#bdbdbd' stall='#762a83' absent='#9e9ac8' partner='#80cdc1' culprit='#ffeda0'
fx=hack/html-fixture

render fixture 1 "$fx/run.json" --baseline "$fx/baseline.json"
render control 1 "$fx/control.json" --baseline "$fx/baseline.json"
grep -q '2 regression(s) against the baseline — exit code 1' "$out/fixture.html" || { echo "the fixture's banner does not read its verdict"; exit 1; }
shoot fixture 2600
shoot control 2600
# Green is a port that met its floor (a healthy port at its usual
# figures is green); the fixture has no marginal miss, so amber is
# not looked for here (reports' Go tests cover it).
check -png "$out/fixture.png" -netlog "$out/fixture.netlog.json" -distinct 50 \
  -min "$green=2000" -min "$grey=2000" -min "$stall=2000" -min "$absent=2000" \
  -vs "$out/control.png" -more "$red=2000"

guest=$res/guest/results.json
bed=("$guest")
# The GPU worlds stay out: against a guest-only baseline each of their
# not-run checks is a new not-run, which the diff counts as a regression.
# The restart round that passed: when the first one met the guest kernel's
# I/O error on the hard mount (hack/disruptive-test.sh accepts that as
# reported and runs the round once more), restart-2 (its failing check is a
# new fail against the guest baseline: a regression the page is right to
# show, not this test's point).
restart=$res/disruptive/restart/results.json
[[ -f $res/disruptive/restart-2/results.json ]] && restart=$res/disruptive/restart-2/results.json
[[ -f $restart ]] && bed+=("$restart")
# The baseline: the guest run's figures as an earlier run's (another run
# id): a run is no baseline of itself, and the report refuses that.
earlier=$out/guest-earlier.json
sed -E '0,/"runId": *"([^"]*)"/s//"runId": "\1-earlier"/' "$guest" >"$earlier"
render bed 1 "${bed[@]}" --baseline "$earlier"
grep -q 'no regression against the baseline' "$out/bed.html" || { echo "the bed page against its guest run's figures must show no regression"; exit 1; }
shoot bed 8000
want_stall=()
[[ -f $restart ]] && want_stall=(-min "$stall=500" -min "$absent=500")
check -png "$out/bed.png" -netlog "$out/bed.netlog.json" -distinct 50 -min "$green=2000" -min "$grey=1000" "${want_stall[@]}"

(cd hack && go build -o "$out/fleetfixture" ./tools/fleetfixture)
"$out/fleetfixture" -nodes 256 -rails 8 -bad gpu-017/3 -o "$out/fleet.json"
"$out/fleetfixture" -nodes 256 -rails 8 -o "$out/fleet-healthy.json"
t=$(date +%s%N)
render fleet 1 "$out/fleet.json"
fleet_ms=$((($(date +%s%N) - t) / 1000000))
render fleet-healthy 0 "$out/fleet-healthy.json"
# Byte offsets: the verdict naming the culprit comes before the matrix.
verdict_at=$(grep -bo 'id="verdict">NOT PASSED — culprit: port mlx5_3/1 on node gpu-017 ' "$out/fleet.html" | head -1 | cut -d: -f1)
matrix_at=$(grep -bo 'class="fleet"' "$out/fleet.html" | head -1 | cut -d: -f1)
[[ -n $verdict_at && -n $matrix_at ]] && ((verdict_at < matrix_at)) ||
  { grep -o 'id="verdict">[^<]*' "$out/fleet.html"; echo "the fleet page's verdict does not name port mlx5_3/1 on node gpu-017 before the matrix"; exit 1; }
shoot fleet 900
shoot fleet-healthy 900
check -png "$out/fleet.png" -netlog "$out/fleet.netlog.json" -distinct 20 \
  -min "$green=100000" -min "$culprit=20000" -min "$partner=200" \
  -vs "$out/fleet-healthy.png" -more "$culprit=20000" -more "$partner=200"
echo "fleet page (256 nodes × 8 rails, one bad port): $(stat -c %s "$out/fleet.html") bytes, rdmasuite report --format html in ${fleet_ms} ms"

printf '<!DOCTYPE html><html><body><img src="http://192.0.2.1/x.png">control</body></html>\n' >"$out/outside.html"
shoot outside 300
if check -png "$out/outside.png" -netlog "$out/outside.netlog.json" -distinct 1 >"$out/outside.check.log" 2>&1; then
  cat "$out/outside.check.log"; echo "the net-log check missed a page that loads an outside image"; exit 1
fi
grep -q 'the page requested http://192.0.2.1/x.png' "$out/outside.check.log" || { cat "$out/outside.check.log"; exit 1; }
rm -rf "$out/profile"
echo "html report: fixture, bed and fleet pages drawn by $(chromium --version 2>/dev/null | head -1), no request made; pages in $out"
