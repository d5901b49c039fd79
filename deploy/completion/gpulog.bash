# bash completion for gpulog. The commands and options come from the
# installed binary's own --help texts at completion time, so this file never
# lists them and cannot drift from them.
_gpulog() {
    local cur prev cmd
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cmd=${COMP_WORDS[1]}
    if [ "$COMP_CWORD" -eq 1 ]; then
        local cmds
        cmds=$("${COMP_WORDS[0]}" --help 2>/dev/null | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p')
        mapfile -t COMPREPLY < <(compgen -W "$cmds --help --version" -- "$cur")
        return
    fi
    case $cmd in
        config)
            if [ "$COMP_CWORD" -eq 2 ]; then
                mapfile -t COMPREPLY < <(compgen -W "check print --help" -- "$cur")
                return
            fi ;;
    esac
    case $prev in
        --config|--file|-f|--output|-o|--detectors|-d|--deadletter|--es-ca|--es-cert|--es-key|\
        --es-api-key-file|--es-password-file|--state-dir|-s|--schemas-dir)
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            return ;;
    esac
    if [[ $cur == -* ]]; then
        local opts
        # the usage lines and the option column of the option lines
        opts=$("${COMP_WORDS[0]}" "$cmd" --help 2>/dev/null \
               | awk '/^usage:/{u=1} u&&/^$/{u=0} u{print; next} /^ +-/{sub(/^ +/, ""); sub(/  .*/, ""); print}' \
               | grep -oE -- '(^|[][ |,])--?[A-Za-z][A-Za-z0-9-]*' | sed 's/^[][ |,]//' | sort -u)
        mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
        return
    fi
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}
complete -o filenames -F _gpulog gpulog
