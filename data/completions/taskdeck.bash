# bash completion for taskdeck (installed by `make install` into
# $(datadir)/bash-completion/completions/taskdeck).
# The commands are those of `taskdeck --help`; tests/completions.sh checks that.

_taskdeck_commands="artifacts connectors credentials daemon dashboard defaults demo doctor
events install-cli permissions plan projects routing run runs runtimes sessions setup"

_taskdeck_subcommands() {
	case $1 in
	artifacts) echo "list show download" ;;
	connectors) echo "list show add update enable disable remove test login" ;;
	credentials) echo "list show create update delete" ;;
	daemon) echo "start stop status" ;;
	defaults) echo "get set" ;;
	permissions) echo "list show allow deny" ;;
	plan) echo "show approve revise reject" ;;
	projects) echo "list show create update" ;;
	routing) echo "get set" ;;
	runs) echo "list show wait cancel logs watch changes diff revert" ;;
	sessions) echo "list show config" ;;
	esac
}

_taskdeck() {
	local cur=${COMP_WORDS[COMP_CWORD]} i word cmd=
	COMPREPLY=()
	for ((i = 1; i < COMP_CWORD; i++)); do
		word=${COMP_WORDS[i]}
		[[ $word == -* ]] && continue
		cmd=$word
		break
	done
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "--json --timeout --help --version --project --session
			--wait --wait-timeout --follow --plan-first --permission --model --out --force
			--from --stat --yes
			--no-mouse --monochrome" -- "$cur"))
	elif [[ -z $cmd ]]; then
		COMPREPLY=($(compgen -W "$_taskdeck_commands" -- "$cur"))
	elif ((i + 1 == COMP_CWORD)); then
		COMPREPLY=($(compgen -W "$(_taskdeck_subcommands "$cmd")" -- "$cur"))
	fi
}
complete -F _taskdeck taskdeck
