# NexusMem prompt hook for bash (4.4+; millisecond timing needs 5.0+).
#
# Appends one JSON line per command to ${NEXUSMEM_HOME:-$HOME/.nexusmem}/shell-history.jsonl (a relative
# NEXUSMEM_HOME is ignored):
#   {"ts":<epoch ms at start>,"cwd":...,"exit":...,"pipestatus":[...],"duration_ms":...,
#    "command":...,"shell":"bash","session":...,"seq":...,"v":1}
#
# Load it from ~/.bashrc (`nexusmem hook install --shell bash`) or with
# `eval "$(nexusmem hook print bash)"`. The file is written to work both sourced and eval'd, so it
# never uses a top-level `return`: everything sits inside one `if`.
#
# Nothing is forked per prompt: only builtins and parameter expansion run.
#  - PS0 (expanded after a line is read, before it runs) records the start time and a "a command
#    ran" flag with arithmetic side effects inside an array subscript -- no function call, no fork.
#    An empty Enter or a line cancelled with Ctrl-C never expands PS0, so it writes nothing.
#  - The command text comes from the `history` builtin, written to a per-shell scratch file in the
#    NexusMem user dir and read back with `read` (`$(history 1)` would fork).
#  - The first thing in PROMPT_COMMAND is our function, so it sees the user's $? and PIPESTATUS;
#    it hands $? (and $_) back unchanged to whatever runs after it. When something loaded later runs
#    first, the hook puts itself first again at the next prompt (__nexusmem_heal) and records the
#    commands it could not see the status of with "exit":null.
#  - The last thing in PROMPT_COMMAND (bash-preexec's own last step aside) is __nexusmem_postcmd: what ran
#    after our function may have changed history (`history -a; history -n` reads in other terminals'
#    lines), and then it looks again where history stands, so that a line another terminal ran is never
#    taken for this shell's next command. It reads history only when HISTCMD moved.
#  - POSIX mode (`set -o posix`) works: PS0 holds no `!`, which a POSIX-mode prompt reads as the
#    history number.
#  - Leading-space commands are never recorded (HISTCONTROL=ignorespace convention). A command bash
#    kept out of its history (ignorespace, HISTIGNORE) is not recorded either; an immediate repeat
#    dropped by ignoredups/erasedups is recorded when the next line starts, if it ended with the same
#    command as the line it repeats (BASH_COMMAND, taken by PS0; one fork then, see __nexusmem_bc).
#  - Command text that is not valid UTF-8 keeps its valid parts; each invalid byte is written as the
#    text \xNN (byte 0xFF -> "\\xff" in the JSON), as NexusMem spells such a byte in a file name: a
#    Latin-1 caf\xe9.sh stays apart from café.sh, and every line parses.
#  - Every write has its errors discarded: a read-only or full disk never prints into the prompt.
#  - Each line reaches the log in one write(), so shells appending at once never mix their lines;
#    a line over 4 KB (rare) costs one fork for that (see __nexusmem_append_line).

if [[ $- == *i* ]] && [[ -z ${__nexusmem_loaded-} ]] &&
    ((BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 4))); then
    __nexusmem_loaded=1
    # NEXUSMEM_HOME as nexusmem reads it: `~` or `~/...` is the home folder; a relative value would be a
    # different folder in every directory, so it is ignored (the CLI refuses it, `nexusmem doctor` says so).
    __nexusmem_dir=${NEXUSMEM_HOME:-$HOME/.nexusmem}
    if [[ $__nexusmem_dir == \~ || $__nexusmem_dir == \~/* ]]; then
        __nexusmem_dir=$HOME${__nexusmem_dir:1}
    fi
    [[ $__nexusmem_dir == /* ]] || __nexusmem_dir=$HOME/.nexusmem
    # A file there is no folder to write in: the default one, as nexusmem falls back to.
    [[ -e $__nexusmem_dir && ! -d $__nexusmem_dir ]] && __nexusmem_dir=$HOME/.nexusmem
    # Another user's folder (or a link to one) is never written into: its owner could read every command
    # and plant a link where the log goes. Every write below then fails quietly (no line is recorded).
    if [[ -e $__nexusmem_dir && ! -O $__nexusmem_dir ]]; then
        __nexusmem_dir=/dev/null/not-yours
    fi
    __nexusmem_log=$__nexusmem_dir/shell-history.jsonl
    __nexusmem_scratch=$__nexusmem_dir/.bash-$$.tmp
    printf -v __nexusmem_session '%x-%x-%04x%04x' "${EPOCHSECONDS:-0}" "$$" "$RANDOM" "$RANDOM"
    __nexusmem_ran=0
    __nexusmem_t0=0
    # This shell's number of its next line ("seq"): lines that started in one millisecond stay apart.
    __nexusmem_seq=0
    # The folder the command started in, taken by PS0 (a `cd` in the line moves the shell, not the line).
    __nexusmem_wd=
    # Always empty: PS0 looks a key up in it, the folder, to assign that folder on the way (its subscript is
    # a string, not arithmetic).
    declare -gA __nexusmem_wd_keys=()
    __nexusmem_seen=
    # A line bash kept out of history may be an immediate repeat that ignoredups dropped, or a private one
    # (ignorespace): the hook cannot see its text. BASH_COMMAND tells them apart: bash keeps it, across
    # PROMPT_COMMAND and DEBUG traps, as the line's last simple command until the next line runs, so PS0
    # takes it (__nexusmem_bc). Such a line's record waits in __nexusmem_pending, and PS0 writes it (one
    # fork, for those lines only) when that command is the one the repeated line ended with
    # (__nexusmem_pending_bc, which was __nexusmem_last_bc).
    __nexusmem_bc=
    __nexusmem_last_bc=
    __nexusmem_bc_want=0
    __nexusmem_pending=
    __nexusmem_pending_bc=
    __nexusmem_last_text=
    __nexusmem_ps0=('')
    # Control characters 0x01-0x1f (NUL cannot occur in a bash string) and their JSON escapes.
    __nexusmem_ctl=
    __nexusmem_ctl_esc=()
    for __nexusmem_i in {1..31}; do
        printf -v __nexusmem_c '%02x' "$__nexusmem_i"
        printf -v __nexusmem_c '%b' "\\x$__nexusmem_c"
        __nexusmem_ctl+=$__nexusmem_c
        printf -v "__nexusmem_ctl_esc[__nexusmem_i]" '\\u%04x' "$__nexusmem_i"
    done
    unset __nexusmem_i __nexusmem_c

    __nexusmem_umask_file=${__nexusmem_scratch%.tmp}.umask.tmp
    # Source time may fork: create the user dir (0700), the log and this shell's two scratch files
    # (0600: the scratch file holds raw command lines) once, and drop scratch files left by shells
    # that have exited. Later writes into existing files keep these modes whatever the umask.
    # Root makes nothing inside another user's tree: in a shell with that user's HOME or NEXUSMEM_HOME
    # (`sudo -E -s`, `su -m`) the folder would be root's, and that user's own shells could write nothing.
    if [[ ! -d $__nexusmem_dir ]]; then
        __nexusmem_f=$__nexusmem_dir
        while [[ ! -e $__nexusmem_f && $__nexusmem_f == */* ]]; do __nexusmem_f=${__nexusmem_f%/*}; done
        if ((EUID != 0)) || [[ -O ${__nexusmem_f:-/} ]]; then
            (umask 077 && mkdir -p -- "$__nexusmem_dir") 2>/dev/null
        fi
    fi
    # Each on its own: a log that cannot be written (read-only, another owner's) must not leave the scratch
    # files to be made later under the user's umask.
    (
        umask 077
        { : >>"$__nexusmem_log"; } 2>/dev/null || :
        { : >|"$__nexusmem_scratch"; } 2>/dev/null || :
        { : >|"$__nexusmem_umask_file"; } 2>/dev/null || :
    )
    for __nexusmem_f in "$__nexusmem_dir"/.bash-*.tmp; do
        __nexusmem_i=${__nexusmem_f##*/.bash-}
        __nexusmem_i=${__nexusmem_i%%.*}
        if [[ -f $__nexusmem_f && $__nexusmem_i == +([0-9]) ]] && ! kill -0 "$__nexusmem_i" 2>/dev/null; then
            rm -f -- "$__nexusmem_f" 2>/dev/null
        fi
    done
    unset __nexusmem_f __nexusmem_i

    # At exit: record the line that ended the shell (`make; exit` draws no prompt after it, so
    # __nexusmem_precmd never sees it), with the shell's exit status; a line that is only `exit` or
    # `logout` is not recorded. Then the scratch files go with the shell (a sync deletes those of
    # shells killed without an EXIT trap run). Chained in front of the user's EXIT trap, which sees $?
    # unchanged: one set before us at load, one set after us at the first prompt or after the line that
    # set it (__nexusmem_exit_trap). One set where we do not look (a function run at the prompt) replaces
    # it until then: that last line is not recorded and the next sync cleans up instead.
    __nexusmem_exit() {
        local __st=$? __arg=$_ __ex=null
        local -
        set +x
        # A repeat left waiting, when no line ran since (Ctrl-D at the prompt): in a trap BASH_COMMAND is
        # still the last command of the last line.
        if [[ -n $__nexusmem_pending ]] && ((!__nexusmem_ran)); then
            __nexusmem_bc=$BASH_COMMAND
            trap '' XFSZ
            [[ -n $__nexusmem_bc && $__nexusmem_bc == "$__nexusmem_pending_bc" ]] && __nexusmem_write "$__nexusmem_pending"
            __nexusmem_pending=
            __nexusmem_xfsz_restore
        fi
        if ((__nexusmem_ran)); then
            __nexusmem_ran=0
            # The shell's status is the line's when `exit` ended it; when a signal did (the terminal
            # closed while a command ran) it is not the command's: then the status is unknown.
            [[ $BASH_COMMAND == @(exit|logout)?([[:space:]]*) ]] && __ex=$__st
            trap '' XFSZ
            __nexusmem_record "$__ex" "${__ex/null/}" "$__arg" exit
            __nexusmem_xfsz_restore
        fi
        rm -f -- "$__nexusmem_scratch" "$__nexusmem_umask_file" 2>/dev/null
        return "$__st"
    }
    # Put __nexusmem_exit in front of the EXIT trap unless it is there already. At load, at the first
    # prompt (an EXIT trap set later in ~/.bashrc), and after a line that may have set a trap (one
    # fork, `$(trap -p)`, for those only).
    __nexusmem_exit_trap() {
        local t
        t=$(trap -p EXIT)
        # In POSIX mode `trap -p` lists an unset trap too, as `trap -- - EXIT`.
        [[ -n $t ]] && eval "t=($t)"
        if [[ -z $t || ${t[2]} == - ]]; then
            trap __nexusmem_exit EXIT
        elif [[ ${t[2]} != __nexusmem_exit && ${t[2]} != "__nexusmem_exit; "* ]]; then
            # shellcheck disable=SC2064  # the earlier trap's text is meant to be expanded now
            trap "__nexusmem_exit; ${t[2]}" EXIT
        fi
    }
    # A write past the file-size limit (`ulimit -f`) sends SIGXFSZ, which ends the shell: the hook's writes
    # run with it ignored, then the user's own XFSZ trap is put back (as `trap -p` showed it at the first
    # prompt, after ~/.bashrc: one set at the prompt later is replaced by that one), or none. Never left
    # ignored: a program the shell runs would inherit that.
    __nexusmem_xfsz_restore() {
        if [[ -n $__nexusmem_xfsz ]]; then
            eval "$__nexusmem_xfsz"
        else
            trap - XFSZ
        fi
    }
    __nexusmem_exit_trap
    __nexusmem_exit_checked=0
    __nexusmem_xfsz=''
    __nexusmem_xfsz_read=0

    # Run "$@" (a redirection that may create a file) under umask 077, without forking: the current
    # umask is read back through a file that already exists (created 0600 at load).
    __nexusmem_private() {
        local um=
        # Made 0600 at load; one made again here (removed since) is made 0600 too (one fork, that once).
        [[ -e $__nexusmem_umask_file ]] || (umask 077 && : >|"$__nexusmem_umask_file") 2>/dev/null
        { builtin umask >|"$__nexusmem_umask_file" && read -r um <"$__nexusmem_umask_file"; } 2>/dev/null
        builtin umask 077
        "$@"
        builtin umask "${um:-022}"
    }

    # Escape $1 as the body of a JSON string into __nexusmem_json.
    __nexusmem_escape() {
        if [[ $1 == *[![:ascii:]]* ]]; then
            # Work on bytes: ASCII never occurs inside a multibyte UTF-8 sequence, so byte-wise
            # replacement is exact, and invalid sequences cannot confuse the pattern matcher.
            # (Switching the locale costs ~30 us, so pure-ASCII text skips it.)
            local LC_ALL=C
            __nexusmem_escape_ascii "$1"
            __nexusmem_fix_utf8 "$__nexusmem_json"
        else
            __nexusmem_escape_ascii "$1"
        fi
    }

    # Quotes, backslashes and control characters of $1 escaped into __nexusmem_json.
    __nexusmem_escape_ascii() {
        local s=$1 c i
        if ((${#s} > 1024)); then
            __nexusmem_escape_long "$s"
            return
        fi
        s=${s//\\/\\\\}
        s=${s//\"/\\\"}
        if [[ $s == *[$__nexusmem_ctl]* ]]; then
            s=${s//$'\n'/\\n}
            s=${s//$'\t'/\\t}
            s=${s//$'\r'/\\r}
            for ((i = 1; i < 32; i++)); do
                c=${__nexusmem_ctl:i-1:1}
                [[ $s == *"$c"* ]] && s=${s//"$c"/${__nexusmem_ctl_esc[i]}}
            done
        fi
        __nexusmem_json=$s
    }

    # A long $1 escaped piece by piece into __nexusmem_json. Each `${s//…/…}` above goes over the rest of
    # the text again for every match it replaces: the quotes of a pasted 54 KB JSON body took 0.5 s, the
    # tabs and newlines of 100 KB of text 4 s. Pieces of at most 512 bytes cost that on 512 bytes only.
    # The text is halved until the pieces are that short (each second half waits in `later`), so it is
    # copied a few times in all, not once per piece; bytes (C locale), since escaping is byte-wise.
    __nexusmem_escape_long() {
        local LC_ALL=C s
        local -i h
        local -a later=("$1") pieces=()
        while ((${#later[@]})); do
            s=${later[-1]}
            unset 'later[-1]'
            while ((${#s} > 512)); do
                h=${#s}/2
                later+=("${s:h}")
                s=${s:0:h}
            done
            __nexusmem_escape_ascii "$s"
            pieces+=("$__nexusmem_json")
        done
        local IFS=
        __nexusmem_json=${pieces[*]}
    }

    # The longest prefix of valid UTF-8 (no overlong forms, UTF-16 surrogates or code points above
    # U+10FFFF), as an ERE over bytes: matched in the caller's C locale.
    __nexusmem_utf8_re=$'^(([\x01-\x7f]|[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf][\x80-\xbf]|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf][\x80-\xbf]|[\xf1-\xf3][\x80-\xbf][\x80-\xbf][\x80-\xbf]|\xf4[\x80-\x8f][\x80-\xbf][\x80-\xbf])*)'

    # Copy $1 to __nexusmem_json, keeping valid UTF-8 and turning each invalid byte into \\xNN (the text
    # \xNN once the JSON is read).
    # Runs only for text with bytes >= 0x80, in the caller's C locale. Each run of valid text is taken in
    # one regex match: a character at a time, the copies of the rest made a 30,000-character CJK command
    # take 12 s to reach the prompt. Past an invalid byte the rest is halved until it is 64 bytes or less
    # (each second half waits in `later`), and that short piece is read a character at a time: a regex
    # match (bash compiles it each time, ~25 us) and a copy of the whole rest for each invalid byte made a
    # command with 10,000 of them hold the prompt 1.6 s.
    __nexusmem_fix_utf8() {
        [[ $1 =~ $__nexusmem_utf8_re ]]
        # Valid throughout (the common case): that one match is all.
        if ((${#BASH_REMATCH[1]} == ${#1})); then
            __nexusmem_json=$1
            return
        fi
        local s=$1 out='' head hex x=$'[\x80-\xbf]'
        local -a later=()
        local -i h n
        while :; do
            out+=${BASH_REMATCH[1]}
            s=${s:${#BASH_REMATCH[1]}}
            # Cut near the middle before the first of three bytes that is no continuation byte (0x80-0xbf),
            # or after three that are: no character spans the cut, so each half reads as it did in the whole.
            while ((${#s} > 64)); do
                h=${#s}/2
                head=${s:h:3}
                head=${head%%[!$'\x80'-$'\xbf']*}
                h+=${#head}
                later+=("${s:h}")
                s=${s:0:h}
            done
            while [[ -n $s ]]; do
                head=${s%%[![:ascii:]]*}
                out+=$head
                s=${s:${#head}}
                [[ -n $s ]] || break
                # A valid character of two, three or four bytes (the regex's alternatives), or an invalid byte.
                case $s in
                [$'\xc2'-$'\xdf']$x*) n=2 ;;
                $'\xe0'[$'\xa0'-$'\xbf']$x* | [$'\xe1'-$'\xec\xee\xef']$x$x* | $'\xed'[$'\x80'-$'\x9f']$x*) n=3 ;;
                $'\xf0'[$'\x90'-$'\xbf']$x$x* | [$'\xf1'-$'\xf3']$x$x$x* | $'\xf4'[$'\x80'-$'\x8f']$x$x*) n=4 ;;
                *) n=0 ;;
                esac
                if ((n)); then
                    out+=${s:0:n}
                    s=${s:n}
                else
                    printf -v hex '\\\\x%02x' "'${s:0:1}"
                    out+=$hex
                    s=${s:1}
                fi
            done
            ((${#later[@]})) || break
            s=${later[-1]}
            unset 'later[-1]'
            [[ $s =~ $__nexusmem_utf8_re ]]
        done
        __nexusmem_json=$out
    }

    # Leave $? = $1 and $_ = $2 for whatever runs after us.
    __nexusmem_restore() {
        return "$1"
    }

    # Put our function first in PROMPT_COMMAND and __nexusmem_postcmd last: at load, and again when something
    # loaded after the hook put itself in front (a prompt framework, `PROMPT_COMMAND="history -a;
    # $PROMPT_COMMAND"`), or after us (`PROMPT_COMMAND+=$'\n'...`), or runs the old PROMPT_COMMAND from inside
    # its own function; in front, its commands reset $? before we read it. bash-preexec's
    # __bp_interactive_mode stays last: its DEBUG trap takes whatever runs after it for the user's command.
    # Builtins only. An old entry is replaced by `:` in a string (deleting it could leave `;;`) and dropped
    # from an array.
    __nexusmem_heal() {
        local i pc end=$'\n'__nexusmem_postcmd
        # Under `set -u` (set in ~/.bashrc before the hook) an unset PROMPT_COMMAND must not be expanded.
        if [[ -v PROMPT_COMMAND && ${PROMPT_COMMAND@a} == *a* ]]; then
            for i in "${!PROMPT_COMMAND[@]}"; do
                # The two as the string the hook set, made an entry by something that made PROMPT_COMMAND an array.
                [[ ${PROMPT_COMMAND[i]} == __nexusmem_@(pre|post)cmd?($'\n'__nexusmem_postcmd) ]] &&
                    unset 'PROMPT_COMMAND[i]'
            done
            local -a rest=("${PROMPT_COMMAND[@]}") last=()
            i=${#rest[@]}
            if ((i)) && [[ ${rest[i - 1]} == __bp_interactive_mode ]]; then
                last=(__bp_interactive_mode)
                unset 'rest[i - 1]'
            fi
            PROMPT_COMMAND=(__nexusmem_precmd "${rest[@]}" __nexusmem_postcmd "${last[@]}")
        else
            pc=${PROMPT_COMMAND-}
            pc=${pc//__nexusmem_precmd/:}
            pc=${pc//__nexusmem_postcmd/:}
            if [[ $pc == *__bp_interactive_mode ]]; then
                pc=${pc%__bp_interactive_mode}
                end+=$'\n'__bp_interactive_mode
            fi
            # shellcheck disable=SC2178  # a plain string here, the array case is handled above
            PROMPT_COMMAND=__nexusmem_precmd${pc:+$'\n'$pc}$end
        fi
    }

    __nexusmem_precmd() {
        local __st=$? __pst="${PIPESTATUS[*]}" __arg=$_ __known=1
        # Under `set -x` the hook's own lines (~75 a prompt) were traced into the terminal: xtrace is off in
        # here, and back as it was on return (`local -`, bash 4.4).
        local -
        set +x
        if ((!__nexusmem_xfsz_read)); then
            __nexusmem_xfsz_read=1
            __nexusmem_xfsz=$(trap -p XFSZ)
        fi
        trap '' XFSZ
        [[ ${PS0-} == *"$__nexusmem_ps0_text"* ]] || PS0=${PS0-}$__nexusmem_ps0_text
        # First in PROMPT_COMMAND (its first word, or its array's first entry) and called by it, not
        # from inside another function: then $? is the command's. ${PROMPT_COMMAND} is an array's [0].
        # shellcheck disable=SC2128  # the first entry is what is meant
        if [[ ${PROMPT_COMMAND-} == __bp_precmd_invoke_cmd* && -n ${__bp_last_ret_value-} ]] &&
            [[ -z ${FUNCNAME[1]-} || ${FUNCNAME[1]} == main ]]; then
            # bash-preexec (atuin, iTerm2, Warp load it) put itself first at its first prompt: it keeps the
            # command's status and pipeline status for what runs after it. The first command of every
            # terminal was recorded with its status unknown.
            __st=$__bp_last_ret_value
            __pst="${BP_PIPESTATUS[*]-}"
            __nexusmem_heal
        elif [[ ${PROMPT_COMMAND-} != __nexusmem_precmd && ${PROMPT_COMMAND-} != __nexusmem_precmd[$'\n'\;]* ]]; then
            __nexusmem_heal
            __known=0
        elif [[ -n ${FUNCNAME[1]-} && ${FUNCNAME[1]} != main ]]; then
            __known=0
        elif [[ ${PROMPT_COMMAND[*]-} != *__nexusmem_postcmd?(?(?)__bp_interactive_mode) ]]; then
            # Something was added after __nexusmem_postcmd (or put PROMPT_COMMAND back to the hook alone).
            __nexusmem_heal
        fi
        if ((!__known)); then
            # Something ran before us: the status we see is not the command's.
            if ((__nexusmem_ran)); then
                __nexusmem_ran=0
                __nexusmem_took_bc
                __nexusmem_record null "" ""
            fi
            __nexusmem_bc=
            __nexusmem_xfsz_restore
            [[ $- == *e* ]] || __nexusmem_restore "$__st" "$__arg"
            return
        fi
        if ((__nexusmem_ran)); then
            __nexusmem_ran=0
            __nexusmem_took_bc
            __nexusmem_record "$__st" "$__pst" "$__arg"
        else
            # First prompt, empty line or Ctrl-C at the prompt: only learn where history stands.
            __nexusmem_history
            __nexusmem_seen=$__nexusmem_hist
        fi
        if ((!__nexusmem_exit_checked)); then
            __nexusmem_exit_checked=1
            __nexusmem_exit_trap
        fi
        __nexusmem_bc=
        __nexusmem_xfsz_restore
        # Under `set -e` (typed at the prompt) a non-zero status handed back here would end the shell
        # itself: the terminal closed after `false && true`. Then later prompt code sees 0.
        [[ $- == *e* ]] || __nexusmem_restore "$__st" "$__arg"
    }

    # Last in PROMPT_COMMAND (see __nexusmem_heal): when what ran after __nexusmem_precmd moved HISTCMD
    # (`history -n` read in lines other terminals ran, `history -c; history -r` numbered them anew), look
    # again where history stands. Else the next line that bash keeps out of history (` export TOKEN=...`)
    # would be taken for the newest of those, run here, with this line's status. $? and $_ go on unchanged
    # to PS1.
    __nexusmem_postcmd() {
        local __st=$? __arg=$_ -
        set +x
        if ((${HISTCMD-0} != __nexusmem_hist_hc)); then
            trap '' XFSZ
            __nexusmem_history
            __nexusmem_seen=$__nexusmem_hist
            __nexusmem_xfsz_restore
        fi
        [[ $- == *e* ]] || __nexusmem_restore "$__st" "$__arg"
    }

    # The newest history entry ("NUM  TEXT", or empty) into __nexusmem_hist, without forking:
    # `history 1` is appended NUL-terminated to a scratch file and read back through a read fd
    # that stays open, so each prompt reads just the new record. (Truncating the file every prompt
    # instead costs ~0.2 ms on ext4, which flushes a file rewritten in place; a re-read with
    # mapfile reads byte by byte.) The file is emptied every 1000 prompts. A sync overwrites it with
    # zeros (no raw command stays on disk); a record read back empty that way makes us reset the file
    # and try once more.
    __nexusmem_scratch_n=0
    __nexusmem_rfd=
    # HISTCMD when history was last read: __nexusmem_postcmd reads it again only once that moved.
    __nexusmem_hist_hc=0
    __nexusmem_history() {
        local HISTTIMEFORMAT='' rec try
        __nexusmem_hist=
        __nexusmem_hist_hc=${HISTCMD-0}
        for try in 1 2; do
            if ((++__nexusmem_scratch_n > 1000 || try == 2)) || [[ -z $__nexusmem_rfd ]]; then
                __nexusmem_scratch_n=0
                if [[ -n $__nexusmem_rfd ]]; then
                    { exec {__nexusmem_rfd}<&-; } 2>/dev/null
                fi
                __nexusmem_rfd=
                if [[ -f $__nexusmem_scratch ]]; then
                    { : >|"$__nexusmem_scratch"; } 2>/dev/null
                else
                    __nexusmem_private __nexusmem_truncate
                fi
                # A group, so that the 2>/dev/null does not become permanent with exec.
                { exec {__nexusmem_rfd}<"$__nexusmem_scratch"; } 2>/dev/null || return 0
            fi
            { builtin history 1 && builtin printf '\0'; } 2>/dev/null >>"$__nexusmem_scratch" || return 0
            while IFS= read -r -d '' -u "$__nexusmem_rfd" rec 2>/dev/null; do
                __nexusmem_hist=$rec
            done
            # Found a record, or history itself is off or empty: no second try.
            [[ -n $__nexusmem_hist || ! -o history ]] && break
            ((HISTCMD > 1)) || break
        done
        __nexusmem_hist=${__nexusmem_hist%$'\n'}
    }
    __nexusmem_truncate() {
        { : >|"$__nexusmem_scratch"; } 2>/dev/null
    }
    # Append line $1 to the log in ONE write(), so lines of shells appending at once never interleave.
    # printf goes through stdio, which writes a line over its 4096-byte buffer in several pieces: such a
    # (rare) line goes whole into this shell's private umask scratch file, and `cat` (one read and one
    # write of up to 128 KB) appends it; the subshell's umask 077 keeps a recreated file or log 0600.
    # Only those lines fork. The length is counted in bytes (C locale) only past 1023 characters.
    __nexusmem_append_line() {
        local n=${#1}
        if ((n > 1023)); then
            local LC_ALL=C
            n=${#1}
        fi
        if ((n < 4096)); then
            { builtin printf '%s\n' "$1"; } 2>/dev/null >>"$__nexusmem_log"
        else
            (umask 077 && builtin printf '%s\n' "$1" >|"$__nexusmem_umask_file" &&
                exec cat -- "$__nexusmem_umask_file" >>"$__nexusmem_log") 2>/dev/null
            { : >|"$__nexusmem_umask_file"; } 2>/dev/null
        fi
    }

    # Whether the line $1 only defines a function (`name() { …; }`, `function name { …; }`, `name() ( … )`),
    # which runs nothing: bash leaves the previous line's PIPESTATUS. Read from the line's first 100
    # characters (a name, `()` and the brace that opens the body) and its last, with no extglob over the
    # whole line: `*[…]*([[:space:]])` tried the `*(…)` at every `}` of it, and a pasted 54 KB JSON body
    # held the prompt 4 s. `*[…]` is one pass over the line; one that ends in blanks (rare) goes to a regex.
    __nexusmem_close_re='[})][[:space:]]*$'
    __nexusmem_defines() {
        local t name fn=0
        [[ $1 == *[\}\)[:space:]] ]] || return 1
        [[ $1 == *[\}\)] || $1 =~ $__nexusmem_close_re ]] || return 1
        t=${1:0:100}
        t=${t#"${t%%[![:space:]]*}"}
        if [[ $t == function[[:space:]]* ]]; then
            fn=1
            t=${t#function}
            t=${t#"${t%%[![:space:]]*}"}
            name=${t%%[[:space:]\(\{]*}
        else
            name=${t%%[[:space:]\(]*}
            [[ $name != *=* ]] || return 1
        fi
        [[ -n $name && $name != *[\)\;\&\|\<\>\{\}\$\"\'\`]* ]] || return 1
        t=${t:${#name}}
        t=${t#"${t%%[![:space:]]*}"}
        if [[ $t == \(* ]]; then
            t=${t:1}
            t=${t#"${t%%[![:space:]]*}"}
            [[ $t == \)* ]] || return 1
            t=${t:1}
            t=${t#"${t%%[![:space:]]*}"}
        elif ((!fn)); then
            return 1
        fi
        [[ $t == [\{\(]* ]]
    }

    # Whether the line $1 ends sending a job to the background (`cmd &`): its last `&` is not one of `&&` or
    # `>&`, and no odd run of backslashes quotes it (`echo \&`, `echo \\\&`; `echo \\&` is a job). A `&`
    # in quotes ends no line: the closing quote does. Tested as __nexusmem_defines tests the end.
    __nexusmem_amp_re='[^&>]&[[:space:]]*$'
    __nexusmem_background() {
        local t n=0
        [[ $1 == *[\&[:space:]] ]] || return 1
        [[ $1 == *[!\&\>]\& || $1 =~ $__nexusmem_amp_re ]] || return 1
        t=${1%\&*}
        while [[ $t == *\\ ]]; do
            t=${t%?}
            ((++n))
        done
        ((n % 2 == 0))
    }

    __nexusmem_record() {
        local st=$1 pst=$2 now t0 num text dur='' pipe='' cmd cwd=${__nexusmem_wd:-$PWD} line repeat=0
        __nexusmem_wd=
        now=${EPOCHREALTIME-}
        now=${now//[!0-9]/}
        __nexusmem_history
        if [[ $__nexusmem_hist == "$__nexusmem_seen" ]]; then
            # Bash kept this line out of its history. Record it only as an immediate repeat that
            # ignoredups/erasedups dropped; ignorespace and HISTIGNORE lines stay private.
            [[ ${HISTCONTROL-} == *dups* || ${HISTCONTROL-} == *ignoreboth* ]] || return 0
            [[ -n $__nexusmem_hist ]] || return 0
            repeat=1
        fi
        __nexusmem_seen=$__nexusmem_hist
        # "%5d%c %s": spaces, the number, one flag char ('*' when edited), a space, the text.
        text=${__nexusmem_hist#"${__nexusmem_hist%%[![:space:]]*}"}
        num=${text%%[![:digit:]]*}
        [[ -n $num ]] || return 0
        text=${text:${#num}+2}
        [[ -n $text && $text != [[:space:]]* ]] || return 0
        # A repeat is of this shell's own last line, not of one `history -n` read in from another terminal.
        ((repeat)) && [[ $text != "$__nexusmem_last_text" ]] && return 0
        __nexusmem_last_text=$text
        # At exit ($4), a line that did nothing but end the shell is not worth a record.
        if [[ -n ${4-} && $text =~ ^(exit|logout)([[:space:]]+[0-9]+)?[[:space:]]*$ ]]; then
            return 0
        fi
        # A line that may have replaced our EXIT trap (`trap ... EXIT`, sourcing a file): chain it again.
        if [[ $text == *trap* || $text == @(source|.)[[:space:]]* ]] && [[ -z ${4-} ]]; then
            __nexusmem_exit_trap
        fi
        if [[ -n $now ]]; then
            t0=$__nexusmem_t0
            ((t0 > 0 && t0 <= now)) || t0=$now
            dur=",\"duration_ms\":$(((now - t0) / 1000))"
            t0=$((t0 / 1000))
        else
            printf -v t0 '%(%s)T' -1
            t0=$((t0 * 1000))
        fi
        # PIPESTATUS is the pipeline's own only when it holds the status (the last stage's, or under
        # pipefail the last failing one's): a job stopped with Ctrl-Z (148) leaves the previous one there,
        # as does a line that sends a job to the background (`cmd &`, whose $? is 0: after `false | cat`,
        # [1, 0] again) or one that defines a function.
        [[ -n $pst && " $pst " == *" $st "* ]] && ! __nexusmem_background "$text" &&
            ! { ((st == 0)) && __nexusmem_defines "$text"; } && pipe=",\"pipestatus\":[${pst// /,}]"
        __nexusmem_escape "$text"
        cmd=$__nexusmem_json
        __nexusmem_escape "$cwd"
        cwd=$__nexusmem_json
        ((++__nexusmem_seq))
        printf -v line '{"ts":%s,"cwd":"%s","exit":%s%s%s,"command":"%s","shell":"bash","session":"%s","seq":%s,"v":1}' \
            "$t0" "$cwd" "$st" "$pipe" "$dur" "$cmd" "$__nexusmem_session" "$__nexusmem_seq"
        if ((repeat)); then
            # Written by PS0 once the next line starts, if this was the repeat (see __nexusmem_bc).
            __nexusmem_pending=$line
            __nexusmem_pending_bc=$__nexusmem_last_bc
            return 0
        fi
        __nexusmem_bc_want=1
        __nexusmem_write "$line"
        return 0
    }
    __nexusmem_write() {
        if [[ ! -e $__nexusmem_log ]]; then
            # The log vanished since the shell started: recreate it 0600 without forking.
            __nexusmem_private __nexusmem_append_line "$1"
        else
            __nexusmem_append_line "$1"
        fi
    }
    # At the prompt after a line ran: the line before it is settled (PS0 wrote its pending record, or not),
    # and when that one was recorded, the command it ended with (taken by PS0) is what a repeat must end with.
    __nexusmem_took_bc() {
        # A repeat left waiting that PS0 did not write (the line that ran was a private one): its number is
        # free again, so that the numbers of the lines recorded show no gap where private ones ran.
        if [[ -n $__nexusmem_pending ]] && [[ -z $__nexusmem_bc || $__nexusmem_bc != "$__nexusmem_pending_bc" ]]; then
            __nexusmem_seq=$((__nexusmem_seq > 0 ? __nexusmem_seq - 1 : 0))
        fi
        __nexusmem_pending=
        if ((__nexusmem_bc_want)); then
            __nexusmem_bc_want=0
            __nexusmem_last_bc=$__nexusmem_bc
        fi
    }
    # In PS0's command substitution (a subshell), while a record waits: write it when the line that ran was
    # the repeat. Prints nothing; hands $? on.
    __nexusmem_flush() {
        local st=$? -
        set +x
        trap '' XFSZ
        [[ -n $__nexusmem_bc && $__nexusmem_bc == "$__nexusmem_pending_bc" ]] && __nexusmem_write "$__nexusmem_pending"
        return "$st"
    }

    # PS0: set the start time (microseconds) and the "a command ran" flag, and keep the folder the command
    # starts in (assigned in the subscript of the empty __nexusmem_wd_keys); expands to nothing. Added
    # again at the next prompt when something loaded later sets PS0 over it (__nexusmem_precmd).
    # shellcheck disable=SC2016  # expanded by bash at each command, not now
    __nexusmem_ps0_text='${__nexusmem_ps0[(__nexusmem_ran=1, __nexusmem_t0=${EPOCHREALTIME//[^0-9]/}+0, 0)]}${__nexusmem_wd_keys[${__nexusmem_wd:=$PWD}.]-}${__nexusmem_wd_keys[${__nexusmem_bc:=$BASH_COMMAND}.]-}${__nexusmem_pending:+$(__nexusmem_flush)}'
    PS0=${PS0-}$__nexusmem_ps0_text
    __nexusmem_heal
    # Take a first look at history now, so an eval'd load does not record the line that loaded it.
    __nexusmem_history
    __nexusmem_seen=$__nexusmem_hist
fi
# Loaded again in the same shell (`source ~/.bashrc` after an edit): the rc file may have set PROMPT_COMMAND
# or PS0 over ours, and nothing more would be recorded. Put both back; a no-op right after the first load.
if [[ -n ${__nexusmem_ps0_text-} ]] && declare -F __nexusmem_heal >/dev/null; then
    [[ ${PS0-} == *"$__nexusmem_ps0_text"* ]] || PS0=${PS0-}$__nexusmem_ps0_text
    # shellcheck disable=SC2128  # the first entry is what is meant
    if [[ ${PROMPT_COMMAND-} != __nexusmem_precmd && ${PROMPT_COMMAND-} != __nexusmem_precmd[$'\n'\;]* ]]; then
        __nexusmem_heal
    fi
fi
