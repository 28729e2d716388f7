# Sourced by tools/test: transparent huge pages for every process of the run, put back as they
# were when it ends.
# Why: the compilers and the sanitizer builds' tests allocate with mmap, not through glibc's malloc
# (whose glibc.malloc.hugetlb tunable tools/test sets too), and on the guests here each 4 KiB page
# fault is dear. With "always" instead of "madvise" (2026-11-29, 2 cores): GCC compiling
# tests/ps/checkpoint_test.cc took 89 000 page faults and 6.0 s of user CPU, against 14 700 and
# 4.9 s; the ASan build's trainer suites (ctest -j4 -R '^trainer\.', when that build still ran a
# process per test) 102-106 s against 79-90 s.
# Only where the setting is writable (root, /sys not read-only); otherwise the run goes on as is.
# Two runs at once: the first to end puts the setting back under the other (which only slows it).
huge_pages_setting=/sys/kernel/mm/transparent_hugepage/enabled
huge_pages_before=

huge_pages_for_this_run() {
  if [ ! -w "$huge_pages_setting" ]; then
    echo "tools/test: $huge_pages_setting is not writable: transparent huge pages stay as they are"
    return 0
  fi
  local current
  current="$(sed -n 's/.*\[\([a-z]*\)\].*/\1/p' "$huge_pages_setting")"
  # Unreadable ("[always] madvise never" names the current one in brackets): left alone, since it
  # could not be put back.
  [ -n "$current" ] && [ "$current" != always ] || return 0
  { echo always >"$huge_pages_setting"; } 2>/dev/null || {
    echo "tools/test: could not set $huge_pages_setting to always: left at $current"
    return 0
  }
  huge_pages_before=$current
  # bash runs the EXIT trap also when a signal ends it (not SIGKILL).
  trap huge_pages_restore EXIT
  echo "tools/test: transparent huge pages set to always for this run (were $current; put back at its end)"
}

huge_pages_restore() {
  [ -n "$huge_pages_before" ] || return 0
  { echo "$huge_pages_before" >"$huge_pages_setting"; } 2>/dev/null || true
  huge_pages_before=
}
