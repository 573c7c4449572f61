# shellcheck shell=bash
# Sourced by hack/incluster-test.sh and hack/disruptive-test.sh: one row of a
# "what the ServiceAccount may and must not do" table.
#
# can VERB RESOURCE[/NAME][:SUBRESOURCE] NAMESPACE|- WANT
# asks `kubectl auth can-i` as $sa (with the caller's kc function), prints
# the row and counts a mismatch in $bad. A subresource is asked with
# --subresource: "pods/exec" would mean the pod named exec.
can() {
  local got res=${2%%:*} sub=() nsarg=()
  [[ $2 == *:* ]] && sub=(--subresource "${2#*:}")
  [[ $3 != - ]] && nsarg=(-n "$3")
  got=$(kc auth can-i "$1" "$res" "${sub[@]}" "${nsarg[@]}" --as "$sa" 2>/dev/null || true)
  printf '  %-8s %-46s %-24s want %-3s got %s\n' "$1" "$2" "$3" "$4" "$got"
  [[ $got == "$4" ]] || bad=$((bad + 1))
}
