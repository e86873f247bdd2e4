# NexusMem prompt hook for fish (3.1+).
#
# Appends one JSON line per command to ${NEXUSMEM_HOME:-$HOME/.nexusmem}/shell-history.jsonl (a relative
# NEXUSMEM_HOME is ignored):
#   {"ts":<epoch ms at start>,"cwd":...,"exit":...,"pipestatus":[...],"duration_ms":...,
#    "command":...,"shell":"fish","session":...,"seq":...,"v":1}
#
# Load it from config.fish (`nexusmem hook install --shell fish`) or with
# `nexusmem hook print fish | source`. Everything sits inside one `if`, so it works either way.
#
# Nothing is forked per prompt: fish_postexec hands us the whole command line (multi-line too),
# $status, $pipestatus and $CMD_DURATION; fish runs builtins inside (...) without forking. fish has
# no builtin wall clock, so the start time is the Linux boot clock (/proc/uptime, read with the
# `read` builtin, 10 ms resolution) plus an offset measured once when this file is loaded; where
# /proc/uptime is missing (macOS) it falls back to the history entry's time (second resolution).
# A command starting with a space is never recorded; an empty Enter fires no event, so no line.
# A line that set no status (`set VAR value`, a comment) is recorded with 0, not the status fish kept
# from the command before it (fish 3.2+: $status_generation tells).
# Text that is not valid UTF-8 keeps its valid parts; each invalid byte (fish holds those as
# U+F600+byte) becomes the text \xNN, as NexusMem spells such a byte in a file name, so every line parses.
# Unwritable logs are skipped silently; on a full disk fish itself reports the failed write on
# stderr, which no builtin can silence: at most once a minute (see __nexusmem_postexec).

if status is-interactive; and not set -q __nexusmem_loaded
    set -g __nexusmem_loaded 1
    # NEXUSMEM_HOME as nexusmem reads it: `~` or `~/...` is the home folder; a relative value would be a
    # different folder in every directory, so it is ignored (the CLI refuses it, `nexusmem doctor` says so).
    set -g __nexusmem_dir $HOME/.nexusmem
    if set -q NEXUSMEM_HOME; and test -n "$NEXUSMEM_HOME"
        set -l __nexusmem_home "$NEXUSMEM_HOME"
        if test "$__nexusmem_home" = "~"; or string match -q -- '~/*' "$__nexusmem_home"
            set __nexusmem_home "$HOME"(string sub -s 2 -- "$__nexusmem_home")
        end
        # A file there is no folder to write in: the default one, as nexusmem falls back to.
        if string match -q -- '/*' "$__nexusmem_home"; and not begin; test -e "$__nexusmem_home"; and not test -d "$__nexusmem_home"; end
            set -g __nexusmem_dir $__nexusmem_home
        end
    end
    # Another user's folder (or a link to one) is never written into: its owner could read every command
    # and plant a link where the log goes. Every write below then fails quietly (no line is recorded).
    if test -e $__nexusmem_dir; and not test -O $__nexusmem_dir
        set -g __nexusmem_dir /dev/null/not-yours
    end
    set -g __nexusmem_log $__nexusmem_dir/shell-history.jsonl
    # Created (0600) on first use: holds a log line too long for one write, just until it is appended.
    set -g __nexusmem_scratch $__nexusmem_dir/.fish-$fish_pid.tmp

    # Source time may fork: create the user dir (0700) and the log (0600), calibrate the clock.
    # Root makes nothing inside another user's tree: in a shell with that user's HOME or NEXUSMEM_HOME
    # (`sudo -E -s`, `su -m`) the folder would be root's, and that user's own shells could write nothing.
    set -l __nexusmem_up $__nexusmem_dir
    while not test -e "$__nexusmem_up"; and string match -q -- '*/*' $__nexusmem_up
        set __nexusmem_up (string replace -r '/[^/]*$' '' -- $__nexusmem_up)
    end
    test -n "$__nexusmem_up"; or set __nexusmem_up /
    if not test -e $__nexusmem_log; and begin; test -O "$__nexusmem_up"; or test (command id -u) -ne 0; end
        command sh -c 'umask 077 && mkdir -p -- "$1" && : >>"$2"' sh $__nexusmem_dir $__nexusmem_log 2>/dev/null
    end
    set -g __nexusmem_clock_offset
    set -l __nexusmem_now (command date +%s%3N 2>/dev/null)
    if not string match -qr '^[0-9]{13,}$' -- "$__nexusmem_now"
        set __nexusmem_now (math (command date +%s 2>/dev/null; or echo 0) \* 1000)
    end
    if test -r /proc/uptime; and read -l __nexusmem_up __nexusmem_idle </proc/uptime
        set __nexusmem_clock_offset (math "$__nexusmem_now - round($__nexusmem_up * 1000)")
    end
    set -g __nexusmem_session (printf '%x-%x-%04x%04x' (math "floor($__nexusmem_now / 1000)") $fish_pid (random 0 65535) (random 0 65535))

    # Control characters and their JSON escapes (\n, \t, \r get the short forms).
    set -g __nexusmem_ctl_chars
    set -g __nexusmem_ctl_escapes
    for __nexusmem_hex in 01 02 03 04 05 06 07 08 0b 0c 0e 0f 10 11 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f
        set -a __nexusmem_ctl_chars (printf "\x$__nexusmem_hex")
        set -a __nexusmem_ctl_escapes "\\u00$__nexusmem_hex"
    end
    set -e __nexusmem_hex

    # Print $argv[1] escaped as the body of a JSON string. (...) splits output into lines, so the
    # text is handled as a list of lines that the final join puts back together with \n escapes.
    function __nexusmem_escape
        set -l s (string replace -a -- '\\' '\\\\' $argv[1])
        set s (string replace -a -- '"' '\\"' $s)
        if string match -qr '[\x01-\x1f]' -- $s
            set s (string replace -a -- \t '\\t' $s)
            set s (string replace -a -- \r '\\r' $s)
            set -l i 1
            for c in $__nexusmem_ctl_chars
                if string match -q -- "*$c*" $s
                    set s (string replace -a -- $c $__nexusmem_ctl_escapes[$i] $s)
                end
                set i (math $i + 1)
            end
        end
        # fish holds each byte of an invalid UTF-8 sequence as the character U+F600 + byte, and
        # decodes 4-6 byte forms above U+10FFFF (which JSON cannot carry) to their numbers. Each distinct
        # one is replaced everywhere in one pass, then the next one looked for: a pass over the whole text
        # for each occurrence made 5,000 invalid bytes take 13 s.
        set -l found (string match -r -- '[^\x{0}-\x{F67F}\x{F700}-\x{10FFFF}]' $s)
        while set -q found[1]
            set -l c $found[1]
            set -l code (printf '%d' "'$c")
            set -l bytes
            if test $code -ge 63104 -a $code -le 63231
                set bytes (math $code - 62976)
            else
                set -l n 4
                test $code -gt 2097151; and set n 5
                test $code -gt 67108863; and set n 6
                set -l lead 240 248 252
                set -l li (math $n - 3)
                set bytes (math "$lead[$li] + floor($code / 64^($n - 1))")
                set -l k (math $n - 2)
                while test $k -ge 0
                    set -a bytes (math "128 + floor($code / 64^$k) % 64")
                    set k (math $k - 1)
                end
            end
            set -l escaped
            for b in $bytes
                set -a escaped '\\\\x'(printf '%02x' $b)
            end
            set s (string replace -a -- $c (string join '' -- $escaped) $s)
            set found (string match -r -- '[^\x{0}-\x{F67F}\x{F700}-\x{10FFFF}]' $s)
        end
        string join -- '\\n' $s
    end

    # Only commands read after this file loaded are recorded (not the line that sourced it).
    set -g __nexusmem_ran 0
    # This shell's number of its next line ("seq"): lines that started in one 10 ms tick stay apart.
    set -g __nexusmem_seq 0
    function __nexusmem_preexec --on-event fish_preexec
        set -g __nexusmem_ran 1
        # The folder the command started in (a `cd` in the line moves the shell, not the line).
        set -g __nexusmem_wd $PWD
        # fish 3.2+ counts the statuses commands set: unchanged at the next postexec, the line set none.
        set -g __nexusmem_gen $status_generation
        set -g __nexusmem_groups (jobs -g 2>/dev/null)
    end

    # A write past the file-size limit (`ulimit -f`) sends SIGXFSZ, which ends the shell: with a handler the
    # shell catches it and the write fails instead. A caught signal is back to its default in the programs
    # the shell runs (unlike an ignored one, which they would inherit).
    function __nexusmem_xfsz --on-signal XFSZ
    end
    function __nexusmem_postexec --on-event fish_postexec
        set -l __nexusmem_st $status $pipestatus
        test "$__nexusmem_ran" = 1; or return
        set -g __nexusmem_ran 0
        # `fish --private` (fish_private_mode): fish keeps none of these commands, and neither does the hook.
        if set -q fish_private_mode; and test -n "$fish_private_mode"
            return
        end
        set -l cmd $argv[1]
        if string match -qr '^\s' -- $cmd; or not string match -qr '\S' -- $cmd
            return
        end
        set -l now
        if set -q __nexusmem_clock_offset[1]; and read -l up idle </proc/uptime 2>/dev/null
            set now (math "$__nexusmem_clock_offset + round($up * 1000)")
        else
            set -l t (builtin history search --max 1 --show-time='%s ' 2>/dev/null)
            set now (math (string split -m1 ' ' -- "$t 0")[1] \* 1000 + $CMD_DURATION)
        end
        # The log would not take the last line (past `ulimit -f`, a full disk): fish prints a failed write
        # whatever the block's stderr is, so for a minute each line goes through `sh`, whose errors are
        # discarded (one fork a command, while the log refuses lines); once one is written, or after that
        # minute, fish writes again itself. Skipping lines for that minute lost every command run meanwhile,
        # even once the disk had room again.
        set -l __nexusmem_quiet 0
        if set -q __nexusmem_pause[1]
            if test "$now" -lt "$__nexusmem_pause"
                set __nexusmem_quiet 1
            else
                set -e __nexusmem_pause
            end
        end
        set -l dur (math "max(0, 0$CMD_DURATION)")
        set -l t0 (math "max(0, $now - $dur)")
        set -l pipe ',"pipestatus":['(string join , -- $__nexusmem_st[2..-1])']'
        # A line that set no status (`set VAR value`, a comment, `begin; end`) leaves $status and
        # $pipestatus as the command before it left them (fish 3.2+ says so by $status_generation): it
        # did what it was asked, 0 as in bash. A skipped `and CMD`, `or CMD`, `&& CMD` set none either:
        # CMD never ran, so its status is unknown (null), neither a failure nor a pass.
        if set -q status_generation[1]; and test "$status_generation" = "$__nexusmem_gen"
            set __nexusmem_st 0
            set pipe ''
            if string match -qr '(^|[\s;|&(])(and|or)\s|&&|\|\|' -- $cmd
                set __nexusmem_st null
            end
        end
        # fish leaves $status as the previous command left it when this one only started a job in the
        # background (`cmd &`) or was stopped with Ctrl-Z. Report them as bash does: 0 for a job sent to
        # the background, 148 (128 + SIGTSTP) for a job this command left stopped; no pipeline status.
        if string match -qr '(^|[^&|\\\\])&\s*$' -- $cmd
            set __nexusmem_st 0
            set pipe ''
        end
        for job in (jobs 2>/dev/null)
            set -l field (string split -- \t $job)
            if test "$field[4]" = stopped; and not contains -- $field[2] $__nexusmem_groups
                set __nexusmem_st 148
                set pipe ''
            end
        end
        set -l cwd (__nexusmem_escape $__nexusmem_wd)
        set -l text (__nexusmem_escape $cmd)
        set -g __nexusmem_seq (math $__nexusmem_seq + 1)
        set -l line (printf '{"ts":%d,"cwd":"%s","exit":%s%s,"duration_ms":%d,"command":"%s","shell":"fish","session":"%s","seq":%d,"v":1}' \
            $t0 "$cwd" $__nexusmem_st[1] "$pipe" $dur "$text" $__nexusmem_session $__nexusmem_seq)
        # Redirection errors in fish are printed whatever the block's stderr is: check first.
        if not test -e $__nexusmem_log
            test -w $__nexusmem_dir; or return
            command sh -c 'umask 077 && : >>"$1"' sh $__nexusmem_log 2>/dev/null
        end
        test -w $__nexusmem_log; or return
        if test $__nexusmem_quiet = 1
            # One write() per line as below: the line goes whole into the scratch file, `cat` appends it.
            command sh -c 'trap "" XFSZ; umask 077; printf "%s\n" "$3" >"$2" && cat -- "$2" >>"$1"; s=$?; : >"$2"; exit $s' \
                sh $__nexusmem_log $__nexusmem_scratch $line 2>/dev/null
            and set -e __nexusmem_pause
            return
        end
        # One write() per line, so lines of shells appending at once never interleave: fish writes a
        # builtin's output in pieces of 512 bytes, so a longer line (rare) goes whole into this shell's
        # private scratch file and `cat` (one read and one write of up to 128 KB) appends it; only those
        # lines fork. Bytes: characters, plus at most 3 more for each non-ASCII one.
        set -l n (string length -- $line)
        if test $n -lt 512; and string match -qr '[^\x00-\x7f]' -- $line
            set n (math $n + 3 \* (string replace -ra '[\x00-\x7f]+' '' -- $line | string length))
        end
        if test $n -lt 512
            printf '%s\n' $line >>$__nexusmem_log
            or set -g __nexusmem_pause (math "$now + 60000")
            return
        end
        if not test -f $__nexusmem_scratch
            command sh -c 'umask 077 && : >>"$1"' sh $__nexusmem_scratch 2>/dev/null
        end
        if test -f $__nexusmem_scratch; and test -w $__nexusmem_scratch
            printf '%s\n' $line >$__nexusmem_scratch
            command cat -- $__nexusmem_scratch >>$__nexusmem_log 2>/dev/null
            true >$__nexusmem_scratch
        end
    end

    # The scratch file goes with the shell (a sync deletes those of shells killed before this ran).
    function __nexusmem_exit --on-event fish_exit
        test -e $__nexusmem_scratch; and command rm -f -- $__nexusmem_scratch 2>/dev/null
    end
end
