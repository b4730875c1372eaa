# Sourced by scripts/demo.sh and scripts/demo_loop.sh: one line per step.
# step NAME PATTERN CMD...: run CMD with its whole output in $LOGS/NAME.log, then print the
# lines of it that match PATTERN (its last line when PATTERN is empty), each after "NAME: ";
# when CMD fails, say so with the end of its log and exit 1.
step() {
    local name=$1 pattern=$2 line
    shift 2
    if ! "$@" >"$LOGS/$name.log" 2>&1; then
        echo "$name FAILED (full output: $LOGS/$name.log):" >&2
        tail -n 30 "$LOGS/$name.log" >&2
        exit 1
    fi
    if [ -n "$pattern" ]; then
        grep -E "$pattern" "$LOGS/$name.log" | sed "s|^|$name: |" ||
            echo "$name: done, but printed no line matching '$pattern' (see $LOGS/$name.log)"
    else
        line=$(tail -n 1 "$LOGS/$name.log")
        case "$line" in
            "$name: "*) echo "$line" ;;  # the command names itself already
            *) echo "$name: $line" ;;
        esac
    fi
}
