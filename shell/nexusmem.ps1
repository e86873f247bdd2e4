# NexusMem prompt hook for PowerShell (7+, and Windows PowerShell 5.1).
#
# Appends one JSON line per command to $env:NEXUSMEM_HOME/shell-history.jsonl (default ~/.nexusmem; a
# relative NEXUSMEM_HOME is ignored):
#   {"ts":<epoch ms at start>,"cwd":...,"exit":...,"duration_ms":...,"command":...,
#    "shell":"pwsh","session":...,"v":1}
#
# Load it from $PROFILE (`nexusmem hook install --shell pwsh`) or with
# `nexusmem hook print pwsh | Out-String | Invoke-Expression`.
#
# It wraps the existing prompt function rather than replacing it: the hook records the last
# history entry (text, start and end time) with the status of $? / $LASTEXITCODE, then calls the
# previous prompt with $? and $LASTEXITCODE as the command left them. No process is started.
# PowerShell has no pipeline status array, so "pipestatus" is omitted. A command starting with a
# space is not recorded; an empty Enter adds no history entry, so it writes nothing. Multi-line
# input typed at the prompt is one history entry and is recorded whole. Every write is wrapped in
# try/catch: an unwritable log never prints into the prompt.

if (-not (Get-Variable -Name __nexusmem_loaded -Scope Global -ErrorAction SilentlyContinue)) {
    if ([Environment]::UserInteractive -and $Host.Name -ne 'Default Host') {
        $global:__nexusmem_loaded = $true
        # NEXUSMEM_HOME as nexusmem reads it: `~` or `~/...` is the home folder; a relative value would be a
        # different folder in every directory, so it is ignored (the CLI refuses it, `nexusmem doctor` says so).
        $global:__nexusmem_dir = Join-Path $HOME '.nexusmem'
        $__nexusmem_home = [string]$env:NEXUSMEM_HOME
        if ($__nexusmem_home -eq '~' -or $__nexusmem_home.StartsWith('~/') -or $__nexusmem_home.StartsWith('~\')) {
            $__nexusmem_home = $HOME + $__nexusmem_home.Substring(1)
        }
        if ([System.IO.Path]::DirectorySeparatorChar -eq '\') {
            $__nexusmem_absolute = $__nexusmem_home -match '^([A-Za-z]:[\\/]|[\\/][\\/])'
        } else {
            $__nexusmem_absolute = $__nexusmem_home.StartsWith('/')
        }
        # A file there is no folder to write in: the default one, as nexusmem falls back to.
        if ($__nexusmem_absolute -and -not (Test-Path -LiteralPath $__nexusmem_home -PathType Leaf)) {
            $global:__nexusmem_dir = $__nexusmem_home
        }
        Remove-Variable -Name __nexusmem_home -ErrorAction SilentlyContinue
        Remove-Variable -Name __nexusmem_absolute -ErrorAction SilentlyContinue
        $global:__nexusmem_log = Join-Path $global:__nexusmem_dir 'shell-history.jsonl'
        $global:__nexusmem_session = [guid]::NewGuid().ToString('N')
        $global:__nexusmem_last_id = -1
        $global:__nexusmem_utf8 = New-Object System.Text.UTF8Encoding($false)

        try {
            if (-not (Test-Path -LiteralPath $global:__nexusmem_dir)) {
                $null = New-Item -ItemType Directory -Force -Path $global:__nexusmem_dir
                if (-not $IsWindows -and $PSVersionTable.PSVersion.Major -ge 7) {
                    # Mode 0700: the folder holds what was typed.
                    [System.IO.File]::SetUnixFileMode($global:__nexusmem_dir, [System.IO.UnixFileMode]'UserRead, UserWrite, UserExecute')
                }
            }
            if (-not (Test-Path -LiteralPath $global:__nexusmem_log)) {
                [System.IO.File]::WriteAllText($global:__nexusmem_log, '', $global:__nexusmem_utf8)
                if (-not $IsWindows -and $PSVersionTable.PSVersion.Major -ge 7) {
                    # Mode 0600: only the owner reads what was typed.
                    [System.IO.File]::SetUnixFileMode($global:__nexusmem_log, [System.IO.UnixFileMode]'UserRead, UserWrite')
                }
            }
        } catch { }

        # Skip whatever is already in history (e.g. the line that loaded this file).
        $__nexusmem_h = Get-History -Count 1
        if ($__nexusmem_h) { $global:__nexusmem_last_id = $__nexusmem_h.Id }
        Remove-Variable -Name __nexusmem_h -ErrorAction SilentlyContinue

        function global:__nexusmem_escape([string]$text) {
            # JSON string body: quotes, backslashes and every control character escaped; .NET
            # strings are UTF-16, so a lone surrogate (from invalid input) becomes \uXXXX too.
            $sb = New-Object System.Text.StringBuilder
            for ($i = 0; $i -lt $text.Length; $i++) {
                $c = $text[$i]
                $code = [int]$c
                if ($c -eq '"') { [void]$sb.Append('\"') }
                elseif ($c -eq '\') { [void]$sb.Append('\\') }
                elseif ($code -eq 10) { [void]$sb.Append('\n') }
                elseif ($code -eq 13) { [void]$sb.Append('\r') }
                elseif ($code -eq 9) { [void]$sb.Append('\t') }
                elseif ($code -lt 32) { [void]$sb.AppendFormat('\u{0:x4}', $code) }
                elseif ([char]::IsSurrogate($c)) {
                    if ([char]::IsHighSurrogate($c) -and $i + 1 -lt $text.Length -and [char]::IsLowSurrogate($text[$i + 1])) {
                        [void]$sb.Append($c).Append($text[$i + 1])
                        $i++
                    } else {
                        [void]$sb.AppendFormat('\u{0:x4}', $code)
                    }
                }
                else { [void]$sb.Append($c) }
            }
            return $sb.ToString()
        }

        function global:__nexusmem_record([bool]$ok, $lastExit) {
            try {
                $entry = Get-History -Count 1
                if (-not $entry -or $entry.Id -eq $global:__nexusmem_last_id) { return }
                $global:__nexusmem_last_id = $entry.Id
                $text = [string]$entry.CommandLine
                if ($text.Length -eq 0 -or $text -match '^\s' ) { return }
                $exit = if ($ok) { 0 } elseif ($lastExit -is [int] -and $lastExit -ne 0) { $lastExit } else { 1 }
                $start = [DateTimeOffset]::new($entry.StartExecutionTime.ToUniversalTime())
                $ts = $start.ToUnixTimeMilliseconds()
                $duration = [int64]($entry.EndExecutionTime - $entry.StartExecutionTime).TotalMilliseconds
                if ($duration -lt 0) { $duration = 0 }
                $cwd = (Get-Location).ProviderPath
                $line = '{"ts":' + $ts + ',"cwd":"' + (__nexusmem_escape $cwd) + '","exit":' + $exit +
                    ',"duration_ms":' + $duration + ',"command":"' + (__nexusmem_escape $text) +
                    '","shell":"pwsh","session":"' + $global:__nexusmem_session + '","v":1}' + "`n"
                [System.IO.File]::AppendAllText($global:__nexusmem_log, $line, $global:__nexusmem_utf8)
            } catch { }
        }

        # Wrap the prompt that exists now (the default one, or the user's / a theme's).
        $global:__nexusmem_previous_prompt = $function:prompt
        function global:prompt {
            # Capture before anything else runs: both are the command's own.
            $__nexusmem_ok = $?
            $__nexusmem_exit = $global:LASTEXITCODE
            __nexusmem_record $__nexusmem_ok $__nexusmem_exit
            $global:LASTEXITCODE = $__nexusmem_exit
            if ($global:__nexusmem_previous_prompt) {
                # Re-create $? for the wrapped prompt: a failing no-op leaves it $false.
                if (-not $__nexusmem_ok) { Write-Error '' -ErrorAction Ignore }
                & $global:__nexusmem_previous_prompt
            } else {
                "PS $($executionContext.SessionState.Path.CurrentLocation)$('>' * ($nestedPromptLevel + 1)) "
            }
        }
    }
}
