# NexusMem prompt hook for zsh.
#
# Appends one JSON line per command to ${NEXUSMEM_HOME:-$HOME/.nexusmem}/shell-history.jsonl (a relative
# NEXUSMEM_HOME is ignored):
#   {"ts":<epoch ms at start>,"cwd":...,"exit":...,"pipestatus":[...],"duration_ms":...,
#    "command":...,"shell":"zsh","session":...,"seq":...,"v":1}
#
# Load it from ~/.zshrc (`nexusmem hook install --shell zsh`) or with
# `eval "$(nexusmem hook print zsh)"`. Written to work both sourced and eval'd: no top-level
# `return`, everything sits inside one `if`.
#
# Nothing is forked per prompt: preexec receives the whole command line (multi-line too) in $1,
# zsh/datetime's $epochtime gives the clock as integers (no locale decimal separator), and the
# line is built with parameter expansion and written with zsh/system's syswrite builtin (one write()
# per line, so shells appending at once never mix their lines; print without that module), errors
# discarded.
# A command starting with a space is never recorded; an empty Enter runs no preexec, so no line.
# Text that is not valid UTF-8 keeps its valid parts; each invalid byte becomes the text \xNN (byte
# 0xFF -> "\\xff" in the JSON), as NexusMem spells such a byte in a file name, so every line parses.

if [[ -o interactive ]] && [[ -z ${__nexusmem_loaded-} ]]; then
    typeset -g __nexusmem_loaded=1
    zmodload -F zsh/datetime p:epochtime 2>/dev/null
    # NEXUSMEM_HOME as nexusmem reads it: `~` or `~/...` is the home folder; a relative value would be a
    # different folder in every directory, so it is ignored (the CLI refuses it, `nexusmem doctor` says so).
    typeset -g __nexusmem_dir=${NEXUSMEM_HOME:-$HOME/.nexusmem}
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
    typeset -g __nexusmem_log=$__nexusmem_dir/shell-history.jsonl
    typeset -g __nexusmem_session
    # zsh's own options here (an anonymous function): a user's `setopt ksh_arrays` numbers arrays from 0.
    () {
        emulate -L zsh
        printf -v __nexusmem_session '%x-%x-%04x%04x' ${epochtime[1]:-0} $$ $RANDOM $RANDOM
    }
    typeset -g __nexusmem_cmd= __nexusmem_pipeline=
    typeset -gi __nexusmem_ran=0 __nexusmem_t0=0 __nexusmem_t1=0
    # This shell's number of its next line ("seq"): lines that started in one millisecond stay apart.
    typeset -gi __nexusmem_seq=0
    # The folder the command started in (a `cd` in the line moves the shell, not the line).
    typeset -g __nexusmem_wd=

    # When the command ended, taken by the first thing zsh runs at the prompt (__nexusmem_first): the user's
    # `precmd` function, which zsh runs before every precmd_functions entry, or else the hook's own entry. $?
    # goes on unchanged; called as `__nexusmem_end && :`, a failing status is no failing command (no ZERR
    # trap, no err_exit or err_return in the user's function).
    __nexusmem_end() {
        local -i __st=$?
        emulate -L zsh
        if (( __nexusmem_ran && ! __nexusmem_t1 )); then
            __nexusmem_now_ms
            __nexusmem_t1=$__nexusmem_now
        fi
        return __st
    }
    # Keep the hook first among the precmd hooks, and __nexusmem_end first in the user's `precmd` function:
    # a `precmd` function ran before the hook (`precmd() { sleep 0.4 }` made `true` take 409 ms), and a hook
    # put first after the hook loaded (`eval "$(direnv hook zsh)"`) too. Checked at every prompt, for the next
    # one: builtins and parameters only.
    __nexusmem_first() {
        [[ ${precmd_functions[1]-} == __nexusmem_precmd ]] ||
            precmd_functions=(__nexusmem_precmd ${precmd_functions:#__nexusmem_precmd})
        if (( ${+functions[precmd]} )) && [[ ${${functions[precmd]}%%$'\n'*} != *__nexusmem_end* ]]; then
            functions[precmd]="__nexusmem_end && :"$'\n'"${functions[precmd]}"
        fi
    }

    # Source time may fork: create the user dir (0700) and the log (0600) once.
    # Root makes nothing inside another user's tree: in a shell with that user's HOME or NEXUSMEM_HOME
    # (`sudo -E -s`, `su -m`) the folder would be root's, and that user's own shells could write nothing.
    if [[ ! -d $__nexusmem_dir ]]; then
        typeset -g __nexusmem_up=$__nexusmem_dir
        while [[ ! -e $__nexusmem_up && $__nexusmem_up == */* ]]; do __nexusmem_up=${__nexusmem_up%/*}; done
        if (( EUID != 0 )) || [[ -O ${__nexusmem_up:-/} ]]; then
            (umask 077 && mkdir -p -- $__nexusmem_dir) 2>/dev/null
        fi
        unset __nexusmem_up
    fi
    if [[ ! -e $__nexusmem_log ]]; then
        (umask 077 && : >>| $__nexusmem_log) 2>/dev/null
    fi

    __nexusmem_now_ms() {
        typeset -gi __nexusmem_now=$(( epochtime[1] * 1000 + epochtime[2] / 1000000 ))
    }

    __nexusmem_preexec() {
        emulate -L zsh
        __nexusmem_cmd=$1
        __nexusmem_wd=$PWD
        __nexusmem_ran=1
        __nexusmem_t1=0
        __nexusmem_now_ms
        __nexusmem_t0=$__nexusmem_now
    }

    # The longest prefix of valid UTF-8 (no overlong forms, UTF-16 surrogates or code points above
    # U+10FFFF), as an ERE over bytes, for zsh/regex; without that module, the byte-by-byte loop below.
    __nexusmem_utf8_re=$'^(([\x01-\x7f]|[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf][\x80-\xbf]|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf][\x80-\xbf]|[\xf1-\xf3][\x80-\xbf][\x80-\xbf][\x80-\xbf]|\xf4[\x80-\x8f][\x80-\xbf][\x80-\xbf])*)'
    typeset -gi __nexusmem_regex=0
    zmodload zsh/regex 2>/dev/null && __nexusmem_regex=1
    # syswrite writes each log line in one write() call, so shells appending at once never mix lines.
    typeset -gi __nexusmem_syswrite=0
    zmodload -F zsh/system b:syswrite 2>/dev/null && __nexusmem_syswrite=1

    # Escape $1 as the body of a JSON string into __nexusmem_json.
    __nexusmem_escape() {
        emulate -L zsh
        # Bytes, not characters: ASCII never occurs inside a multibyte UTF-8 sequence, so byte-wise
        # replacement is exact, and invalid sequences cannot confuse the pattern matcher.
        setopt no_multibyte extended_glob
        if (( ${#1} > 1024 )); then
            __nexusmem_escape_long $1
            return
        fi
        local s=$1 c out='' ascii b hex
        local -i i n k ok
        s=${s//\\/\\\\}
        s=${s//\"/\\\"}
        # A zsh string can hold NUL (Ctrl-V Ctrl-@; a pasted U+E000 becomes one): raw, the line is no JSON.
        [[ $s == *$'\0'* ]] && s=${s//$'\0'/\\u0000}
        if [[ $s == *[$'\x01'-$'\x1f']* ]]; then
            s=${s//$'\n'/\\n}
            s=${s//$'\t'/\\t}
            s=${s//$'\r'/\\r}
            for (( i = 1; i < 32; i++ )); do
                c=${(#)i}
                if [[ $s == *$c* ]]; then
                    printf -v hex '\\u%04x' $i
                    s=${s//$c/$hex}
                fi
            done
        fi
        if [[ $s != *[$'\x80'-$'\xff']* ]]; then
            __nexusmem_json=$s
            return
        fi
        # Each run of valid text in one regex match (a character at a time, the copies of the rest made a
        # 30,000-character CJK command take 40 s to reach the prompt). Past an invalid byte the rest is
        # halved until it is 64 bytes or less (each second half waits in `later`), and that short piece is
        # read a character at a time: a regex match and a copy of the whole rest for each invalid byte made
        # 10,000 of them take 4 s. Without zsh/regex, every piece is read a character at a time.
        local LC_ALL=C
        local -a match mbegin mend
        local MATCH MBEGIN MEND
        if (( __nexusmem_regex )); then
            [[ $s =~ $__nexusmem_utf8_re ]]
            # Valid throughout (the common case): that one match is all.
            if (( ${#match[1]} == ${#s} )); then
                __nexusmem_json=$s
                return
            fi
        fi
        local piece head
        local -a later
        local -i h
        while true; do
            if (( __nexusmem_regex )); then
                out+=$match[1]
                s=${s[${#match[1]}+1,-1]}
            fi
            # Cut near the middle before the first of three bytes that is no continuation byte (0x80-0xbf),
            # or after three that are: no character spans the cut, so each half reads as it did in the whole.
            __nexusmem_halve 64
            # Built apart and added to out in one go: zsh copies the whole string at each +=.
            piece=''
            while [[ -n $s ]]; do
                ascii=${s%%[$'\x80'-$'\xff']*}
                piece+=$ascii
                s=${s[${#ascii}+1,-1]}
                [[ -n $s ]] || break
                b=${s[1]}
                n=0
                case $b in
                ([$'\xc2'-$'\xdf']) n=2 ;;
                ([$'\xe0'-$'\xef']) n=3 ;;
                ([$'\xf0'-$'\xf4']) n=4 ;;
                esac
                ok=0
                if (( n > 0 && ${#s} >= n )); then
                    ok=1
                    for (( k = 2; k <= n; k++ )); do
                        [[ ${s[k]} == [$'\x80'-$'\xbf'] ]] || ok=0
                    done
                    # Overlong forms, UTF-16 surrogates and code points above U+10FFFF are invalid too.
                    case $b in
                    ($'\xe0') [[ ${s[2]} == [$'\xa0'-$'\xbf'] ]] || ok=0 ;;
                    ($'\xed') [[ ${s[2]} == [$'\x80'-$'\x9f'] ]] || ok=0 ;;
                    ($'\xf0') [[ ${s[2]} == [$'\x90'-$'\xbf'] ]] || ok=0 ;;
                    ($'\xf4') [[ ${s[2]} == [$'\x80'-$'\x8f'] ]] || ok=0 ;;
                    esac
                fi
                if (( ok )); then
                    piece+=${s[1,n]}
                    s=${s[n+1,-1]}
                else
                    printf -v hex '\\\\x%02x' $(( #b ))
                    piece+=$hex
                    s=${s[2,-1]}
                fi
            done
            out+=$piece
            (( $#later )) || break
            s=$later[-1]
            later[-1]=()
            (( __nexusmem_regex )) && [[ $s =~ $__nexusmem_utf8_re ]]
        done
        __nexusmem_json=$out
    }

    # The caller's $s halved until it is $1 bytes or less, each second half pushed on the caller's `later`
    # (zsh's locals reach the functions it calls); each cut falls before a byte that starts a character (or
    # after three continuation bytes), so no character spans a cut. Needs no_multibyte in the caller.
    __nexusmem_halve() {
        local head
        local -i h
        while (( ${#s} > $1 )); do
            (( h = ${#s} / 2 ))
            head=${s[h+1,h+3]}
            head=${head%%[^$'\x80'-$'\xbf']*}
            (( h += ${#head} ))
            later+=("${s[h+1,-1]}")
            s=${s[1,h]}
        done
    }

    # A long $1 escaped piece by piece into __nexusmem_json. Each `${s//…/…}` goes over the rest of the text
    # again for every match it replaces: the quotes of a pasted 54 KB JSON body took 0.2-0.3 s, the tabs and
    # newlines of 100 KB of text 2-3 s. The text is halved (copied a few times in all, not once per piece)
    # until each piece is 512 bytes or so, each cut before a byte that starts a character (or after three
    # continuation bytes), so no character spans a cut and each piece escapes as it did in the whole.
    __nexusmem_escape_long() {
        emulate -L zsh
        setopt no_multibyte
        local s head
        local -a later pieces
        local -i h
        later=("$1")
        while (( $#later )); do
            s=$later[-1]
            later[-1]=()
            __nexusmem_halve 512
            __nexusmem_escape $s
            pieces+=("$__nexusmem_json")
        done
        __nexusmem_json=${(j::)pieces}
    }

    # What $pipestatus holds after the line COMMAND ($2), into __nexusmem_pipeline: `timed` when its last
    # pipeline is a `time`d one of several stages, for which zsh keeps the pipeline's status alone (`time
    # make | cat` that failed leaves (0), make's 2 is gone); `none` when its last command sets none, where
    # zsh leaves the previous line's (a bare assignment `X=1`, `[[ … ]]`, `(( … ))`, a job sent to the
    # background, a function's definition: after `false | cat`, [1, 0] again); else empty. The last command
    # of a compound is the one before its closing word (`{ X=1; }`, `for …; do X=$i; done`, `if …; then
    # time make | cat; fi`). The words are zsh's own (the (z) flag reads quotes and `$(…)` as the shell
    # does, and comments too when $1 says the user's shell has `interactive_comments`); a line with none of
    # those words is settled by a look at its text.
    __nexusmem_last_pipeline() {
        emulate -L zsh
        setopt extended_glob
        __nexusmem_pipeline=
        [[ $2 == *(time|=|\[\[|\(\(|\&|\(\)|function)* ]] || return 0
        local -a words
        if (( $1 )); then
            words=(${(Z+C+)2})
        else
            words=(${(z)2})
        fi
        while (( $#words )) && [[ $words[-1] == \; ]]; do words[-1]=(); done
        (( $#words )) || return 0
        if [[ $words[-1] == (\&|\&\||\&!) ]]; then
            __nexusmem_pipeline=none
            return 0
        fi
        # A function defined last (`name() { …; }`, `name() ( … )`, `function name { …; }`) runs nothing: a
        # name stands before the word that opens its body. `() { …; }` and `function { …; }` run at once.
        if [[ $words[-1] == (\}|\)) ]]; then
            local -i i=$#words depth=0
            while (( i )); do
                if [[ $words[i] == $words[-1] ]]; then
                    (( ++depth ))
                elif [[ $words[-1] == \} && $words[i] == \{ || $words[-1] == \) && $words[i] == *\( ]]; then
                    (( --depth )) || break
                fi
                (( --i ))
            done
            (( i > 1 )) && [[ $words[i-1] == \(\) ]] && (( --i ))
            local -i j=i-1
            while (( j )) && [[ $words[j] != (function|*[\;\&\|\(\)\{\}]*|do|then|else) ]]; do (( --j )); done
            if (( i > 1 && j < i - 1 )) && [[ $words[i] == \(\) || $words[j] == function ]]; then
                __nexusmem_pipeline=none
                return 0
            fi
        fi
        while (( $#words > 1 )) && [[ $words[-1] == (\;|\}|done|fi) ]]; do words[-1]=(); done
        # The words after the last `;`, `&&`, `||`, `&` (a newline reads as `;`), and the words that open a
        # compound's body. In a subscript pattern a backslash does not quote `;` or `&`: only `|` is quoted.
        words=("${(@)words[${words[(I)(;|;;|;&|;\||&&|\|\||&|&\||&!)]}+1,-1]}")
        while (( $#words > 1 )) && [[ $words[1] == (\{|do|then|else) ]]; do words[1]=(); done
        if (( ${words[(I)(\||\|&)]} )); then
            [[ $words[1] == time ]] && __nexusmem_pipeline=timed
        elif [[ $words[1] == (\[\[|\(\(*) ]] || (( ! ${words[(I)^([[:alpha:]_][[:alnum:]_]#(\[*\])#(+|)=*)]} )); then
            __nexusmem_pipeline=none
        fi
    }

    # Called by zsh with no arguments; by __nexusmem_exit with the status and pipeline status to write.
    __nexusmem_precmd() {
        local __st=$? __pst="${pipestatus[*]}" __ex __pf=0 __ic=0
        # The user's options, before zsh's own below: how the line ran and how it reads.
        [[ -o pipefail ]] && __pf=1
        [[ -o interactive_comments ]] && __ic=1
        emulate -L zsh
        # A write past the file-size limit (`ulimit -f`) sends SIGXFSZ, which ends the shell: ignored
        # while this runs (emulate -L sets local_traps, so the user's own trap is back on return).
        trap '' XFSZ
        __ex=${1:-$__st}
        (( $# )) && __pst=$2
        (( $# )) || __nexusmem_first
        (( __nexusmem_ran )) || return $__st
        __nexusmem_ran=0
        local cmd=$__nexusmem_cmd line cwd=${__nexusmem_wd:-$PWD} pipe='' dur=''
        __nexusmem_cmd= __nexusmem_wd=
        if [[ $cmd != *[^[:space:]]* || $cmd == [[:space:]]* ]]; then
            return $__st
        fi
        __nexusmem_now_ms
        (( __nexusmem_t1 > 0 && __nexusmem_t1 <= __nexusmem_now )) && __nexusmem_now=$__nexusmem_t1
        local -i t0=$__nexusmem_t0
        (( t0 > 0 && t0 <= __nexusmem_now )) || t0=$__nexusmem_now
        dur=",\"duration_ms\":$(( __nexusmem_now - t0 ))"
        if (( ! $# )) && [[ -n $__pst ]]; then
            __nexusmem_last_pipeline $__ic $cmd
            # No stage's status of a timed pipeline is known; without `pipefail` its $? of 0 is the last
            # stage's alone (`time make | tee log`: tee's), which says nothing of the others: unknown.
            if [[ $__nexusmem_pipeline == timed ]]; then
                __pst=
                (( __pf || __ex )) || __ex=null
            elif [[ $__nexusmem_pipeline == none ]]; then
                __pst=
            fi
        fi
        # $pipestatus is the pipeline's own only when it holds the status: `cmd &` sets $? to 0 and leaves
        # the previous command's $pipestatus there. A job stopped with Ctrl-Z (148) has none, as in bash
        # and fish.
        [[ -n $__pst && $__ex != 148 && " $__pst " == *" $__ex "* ]] && pipe=",\"pipestatus\":[${__pst// /,}]"
        __nexusmem_escape $cmd
        cmd=$__nexusmem_json
        __nexusmem_escape $cwd
        cwd=$__nexusmem_json
        (( ++__nexusmem_seq ))
        printf -v line '{"ts":%d,"cwd":"%s","exit":%s%s%s,"command":"%s","shell":"zsh","session":"%s","seq":%d,"v":1}' \
            "$t0" "$cwd" "$__ex" "$pipe" "$dur" "$cmd" "$__nexusmem_session" "$__nexusmem_seq"
        if [[ ! -e $__nexusmem_log ]]; then
            # The log vanished since the shell started: recreate it 0600. Rare, so a subshell is fine.
            (umask 077 && : >>| $__nexusmem_log) 2>/dev/null
        fi
        # Nested: zsh reports a failed redirection on the stderr in force outside it. syswrite is one
        # write() whatever the length (print splits a line over 8 KB, which could then interleave with
        # another shell's line); without zsh/system, print.
        if (( __nexusmem_syswrite )); then
            { { syswrite -- "$line"$'\n' } >>| $__nexusmem_log } 2>/dev/null
        else
            { { print -r -- "$line" } >>| $__nexusmem_log } 2>/dev/null
        fi
        return $__st
    }

    # At exit: record the line that ended the shell (`make; exit` draws no prompt after it, so
    # __nexusmem_precmd never sees it), with the shell's exit status; a line that is only `exit` or
    # `logout` is not recorded.
    __nexusmem_exit() {
        local __st=$?
        emulate -L zsh
        setopt extended_glob
        # A subshell that exits (`(exit 5)`, `false || (exit 2)`) runs the zshexit hooks too, with the
        # line still pending: only the interactive shell's own exit records it (the prompt does otherwise).
        (( ZSH_SUBSHELL )) && return $__st
        (( __nexusmem_ran )) || return $__st
        if [[ $__nexusmem_cmd == (exit|logout)([[:space:]]##<->)#[[:space:]]# ]]; then
            return $__st
        fi
        # The shell's status is the line's when an `exit` in it ended the shell; when a signal did (the
        # terminal closed while a command ran) it is not the command's: then the status is unknown.
        if [[ $__nexusmem_cmd == (|*[\;\&\|\(\{[:space:]])(exit|logout)(|[\;\&\|\)\}[:space:]]*) ]]; then
            __nexusmem_precmd $__st $__st
        else
            __nexusmem_precmd null ''
        fi
        return $__st
    }

fi
# Run first among the precmd hooks so $? and $pipestatus are still the command's own; zsh gives every later
# hook the same $? again. Done at every load: a ~/.zshrc sourced again after an edit may have set
# precmd_functions over ours, and nothing more would be recorded.
# Under zsh's own options (an anonymous function): with a user's `setopt ksh_arrays`, `$precmd_functions`
# is its first element only (every other hook of theirs was dropped), and with `no_unset` as well an empty
# array stopped the load with "parameter not set" (nothing was recorded).
if [[ -o interactive ]] && (( ${+functions[__nexusmem_precmd]} )); then
    () {
        emulate -L zsh
        typeset -ga precmd_functions preexec_functions zshexit_functions
        __nexusmem_first
        preexec_functions=(${preexec_functions:#__nexusmem_preexec} __nexusmem_preexec)
        zshexit_functions=(__nexusmem_exit ${zshexit_functions:#__nexusmem_exit})
    }
fi
