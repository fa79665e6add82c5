# SPDX-License-Identifier: Apache-2.0
# bash completion for zklock(1), installed as
# $(datadir)/bash-completion/completions/zklock (Debian: the zklock package).
#
# Completes the options (tests/completion checks that the list below is
# every long option of `zklock --help`), the values of --format, --acl,
# --layout and --on-revoke, nothing for durations and other free values,
# and the names of the locks in use after --list, --break, --revoke and --leader: those that
# `zklock -H --list PREFIX/` prints (each inserted quoted, printf %q), asked of the servers of -s/--servers on
# the command line or $ZKLOCK_SERVERS, with --auth if given. That query
# gives up after half a second of connecting (two in all) and says nothing:
# without a server there is simply nothing to complete.

_zklock_options='-s --servers -t --session-timeout --connect-timeout
  --no-follow-config --server-tick -w --wait --timeout -n --nonblock --nb -E
  --conflict-exit-code -k --kill-after --info --auth --acl --layout --on-revoke
  --max-hold -q --quiet -v --verbose -l --list --leader --revoke --break
  --grace --format --label --watch -H --no-header --read --shared --write
  --exclusive -x --limit --elect -c --command --hold --agent -o --close -h
  --help -V --version'

# Does option $1 take the next word as its value?
_zklock_takes_value() {
  case $1 in
    -s | --servers | -t | --session-timeout | --connect-timeout | --server-tick | \
      -w | --wait | --timeout | -E | --conflict-exit-code | -k | --kill-after | --info | \
      --auth | --acl | --layout | --on-revoke | --max-hold | --grace | --limit | --elect | \
      -l | --list | --leader | --revoke | --break | --format | --label | \
      -c | --command | --agent) return 0 ;;
  esac
  return 1
}

# The lock names under the prefix of $1 (what is typed up to its last /),
# one a line; $2... the words typed, for their -s and --auth.
_zklock_names() {
  local cur=$1 prefix=/ i w
  local -a args=(-H --connect-timeout 500ms)
  shift
  local -a words=("$@")
  for ((i = 1; i < ${#words[@]}; i++)); do
    w=${words[i]}
    case $w in
      -s | --servers | --auth) args+=("$w" "${words[i + 1]:-}") ;;
      --servers=* | --auth=*) args+=("$w") ;;
      -s?*) args+=("$w") ;;
      --) break ;;
    esac
  done
  [[ $cur == */* ]] && prefix=${cur%/*}/
  timeout 2 "${words[0]}" "${args[@]}" --list "$prefix" 2>/dev/null |
    cut -f1
}

# What word $1 says once the shell has read it: its quotes and backslashes
# taken off, as far as one word being typed can have them (an opening ' or "
# with no closing one yet, backslash escapes elsewhere).
_zklock_dequote() {
  local s=$1 out='' c i
  case $s in
    \'*) s=${s#\'}; printf '%s' "${s%\'}"; return ;;
    \"*) s=${s#\"}; printf '%s' "${s%\"}"; return ;;
  esac
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    if [[ $c == \\ ]] && ((i + 1 < ${#s})); then
      ((i++))
      c=${s:i:1}
    fi
    out+=$c
  done
  printf '%s' "$out"
}

_zklock() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev='' i name
  ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
  # "--list=db/": bash splits at '=' (COMP_WORDBREAKS)
  if [[ $cur == = ]]; then
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    cur=
  elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
    prev=${COMP_WORDS[COMP_CWORD - 2]}
  elif [[ $cur == --*=* ]]; then
    prev=${cur%%=*}
    cur=${cur#*=}
  fi
  COMPREPLY=()

  # After the '--' that follows a NAME: the command, completed as bash does
  local named=0 w
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    if [[ $w == -- ]] && ((named)); then
      if declare -F _command_offset >/dev/null; then
        _command_offset $((i + 1))
      else
        mapfile -t COMPREPLY < <(compgen -c -- "$cur")
      fi
      return 0
    fi
    if _zklock_takes_value "$w"; then
      ((i++)) # its value is no NAME
    elif [[ $w != -* ]]; then
      named=1
    fi
  done

  case $prev in
    -l | --list | --break | --revoke | --leader)
      # A name may hold a space or a shell metacharacter: compare what the
      # typed word says, and insert each name quoted (printf %q) so that
      # the shell reads it back as the one word it is.
      local said
      said=$(_zklock_dequote "$cur")
      while IFS= read -r name; do
        [[ $name == "$said"* ]] && COMPREPLY+=("$(printf '%q' "$name")")
      done < <(_zklock_names "$said" "${COMP_WORDS[@]}")
      return 0
      ;;
    --format)
      mapfile -t COMPREPLY < <(compgen -W 'table json prometheus' -- "$cur")
      return 0
      ;;
    --acl)
      mapfile -t COMPREPLY < <(compgen -W 'open creator' -- "$cur")
      return 0
      ;;
    --layout)
      mapfile -t COMPREPLY < <(compgen -W 'curator kazoo' -- "$cur")
      return 0
      ;;
    --on-revoke)
      mapfile -t COMPREPLY < <(compgen -W 'HUP INT QUIT USR1 USR2 TERM ALRM' -- "$cur")
      return 0
      ;;
    --agent) # zklockd's socket: a path
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return 0
      ;;
  esac
  # the others: a duration, a number, a host list or free text
  _zklock_takes_value "$prev" && return 0
  if [[ $cur == -* ]]; then
    # shellcheck disable=SC2086 # the list is words
    mapfile -t COMPREPLY < <(compgen -W "$_zklock_options" -- "$cur")
  fi
  return 0
}
complete -F _zklock zklock
