/*
 * taskdeck completion bash|zsh|fish: the shell's completion script.  Each
 * script only asks taskdeck __complete (complete.c) for the candidates.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int cmd_completion_exec(struct cli *, int, char **);

const char *const cli_shells[] = { "bash", "zsh", "fish", NULL };

const struct cli_cmd cmd_completion_entry = {
	"completion", NULL, "SHELL",
	"Print the completion script of SHELL (bash, zsh or fish): commands,\n"
	"options and their values, and ids and names from the running service.\n"
	"bash: source <(taskdeck completion bash); zsh and fish: see taskdeck(1).",
	cli_no_options, 1, 1, cmd_completion_exec
};

static const char completion_bash[] =
"# bash completion for taskdeck: source <(taskdeck completion bash)\n"
"# The candidates come from 'taskdeck __complete WORD...'.\n"
"# _taskdeck_dequote WORD: REPLY is WORD as the command gets it (quotes and\n"
"# backslashes removed, nothing expanded); _taskdeck_quote the quote left open.\n"
"_taskdeck_dequote() {\n"
"	local in=$1 c i\n"
"	REPLY='' _taskdeck_quote=''\n"
"	for ((i = 0; i < ${#in}; i++)); do\n"
"		c=${in:i:1}\n"
"		if [[ $_taskdeck_quote == \"'\" ]]; then\n"
"			[[ $c == \"'\" ]] && _taskdeck_quote= || REPLY+=$c\n"
"		elif [[ $c == \"\\\\\" && ( -z $_taskdeck_quote || ${in:i+1:1} == [\\\"\\\\\\$\\`] ) ]]; then\n"
"			REPLY+=${in:i+1:1}\n"
"			((i++))\n"
"		elif [[ $c == '\"' ]]; then\n"
"			[[ -n $_taskdeck_quote ]] && _taskdeck_quote= || _taskdeck_quote='\"'\n"
"		elif [[ $c == \"'\" && -z $_taskdeck_quote ]]; then\n"
"			_taskdeck_quote=\"'\"\n"
"		else\n"
"			REPLY+=$c\n"
"		fi\n"
"	done\n"
"}\n"
"_taskdeck() {\n"
"	local cur words cword line w desc REPLY _taskdeck_quote\n"
"	local -a lines args descs\n"
"	COMPREPLY=()\n"
"	if declare -F _get_comp_words_by_ref >/dev/null; then\n"
"		_get_comp_words_by_ref -n =: cur words cword\n"
"	else\n"
"		# without bash-completion: join what COMP_WORDBREAKS split at '='\n"
"		local i w\n"
"		words=()\n"
"		for ((i = 0; i <= COMP_CWORD; i++)); do\n"
"			w=${COMP_WORDS[i]}\n"
"			if ((${#words[@]} > 1)) && [[ $w == = || ${words[-1]} == --*= ]]; then\n"
"				words[-1]+=$w\n"
"			else\n"
"				words+=(\"$w\")\n"
"			fi\n"
"		done\n"
"		cword=$((${#words[@]} - 1)) cur=${words[cword]}\n"
"	fi\n"
"	# a name typed in quotes or with backslashes (\"my app, my\\ app) is the name\n"
"	for w in \"${words[@]:1:cword}\"; do\n"
"		_taskdeck_dequote \"$w\"\n"
"		args+=(\"$REPLY\")\n"
"	done\n"
"	mapfile -t lines < <(\"${words[0]}\" __complete \"${args[@]}\" 2>/dev/null)\n"
"	case ${lines[0]-} in\n"
"	:file | :dir)\n"
"		compopt -o filenames 2>/dev/null\n"
"		local IFS=$'\\n'\n"
"		# shellcheck disable=SC2207\n"
"		COMPREPLY=($(compgen \"$([[ ${lines[0]} == :dir ]] && echo -d || echo -f)\" -- \"${cur#--*=}\"))\n"
"		return\n"
"		;;\n"
"	esac\n"
"	for line in \"${lines[@]}\"; do\n"
"		desc=\n"
"		[[ $line == *$'\\t'* ]] && desc=${line#*$'\\t'}\n"
"		line=${line%%$'\\t'*}\n"
"		[[ $cur == --*=* && $COMP_WORDBREAKS == *=* ]] && line=${line#*=}\n"
"		# a title with spaces (a session's) goes in as one word; inside an\n"
"		# open quote readline closes it\n"
"		[[ -z $_taskdeck_quote && $line == *[^A-Za-z0-9_./:@%+,=-]* ]] &&\n"
"			printf -v line %q \"$line\"\n"
"		[[ -n $line ]] && COMPREPLY+=(\"$line\") && descs+=(\"$desc\")\n"
"	done\n"
"	# a list shown (Tab Tab): each candidate with its description, as zsh\n"
"	# and fish show them; one candidate alone goes in without it\n"
"	if ((${#COMPREPLY[@]} > 1)) && [[ ${COMP_TYPE-9} != 9 ]]; then\n"
"		local i width=0 max=${COLUMNS:-80}\n"
"		for w in \"${COMPREPLY[@]}\"; do ((${#w} > width)) && width=${#w}; done\n"
"		for i in \"${!COMPREPLY[@]}\"; do\n"
"			[[ -n ${descs[i]} ]] || continue\n"
"			printf -v line '%-*s  (%s)' \"$width\" \"${COMPREPLY[i]}\" \"${descs[i]}\"\n"
"			((${#line} > max - 1)) && line=\"${line:0:max-5}...)\"\n"
"			COMPREPLY[i]=$line\n"
"		done\n"
"	fi\n"
"	if declare -F __ltrim_colon_completions >/dev/null; then\n"
"		__ltrim_colon_completions \"$cur\"\n"
"	fi\n"
"}\n"
"complete -F _taskdeck taskdeck\n";

static const char completion_zsh[] =
"#compdef taskdeck\n"
"# zsh completion for taskdeck: save it as _taskdeck in a directory of $fpath\n"
"#   taskdeck completion zsh > \"${fpath[1]}/_taskdeck\"\n"
"# or load it into this shell (after compinit): source <(taskdeck completion zsh)\n"
"# The candidates come from 'taskdeck __complete WORD...'.\n"
"_taskdeck() {\n"
"	local -a lines cands descs\n"
"	local line\n"
"	# the word completed as typed so far, without its quotes (\"my app, my\\ app)\n"
"	lines=(\"${(@f)$(${(Q)words[1]} __complete \"${(@Q)words[2,CURRENT-1]}\" \\\n"
"		\"${(Q)PREFIX}\" 2>/dev/null)}\")\n"
"	case ${lines[1]-} in\n"
"	(:file) _files; return ;;\n"
"	(:dir) _files -/; return ;;\n"
"	esac\n"
"	for line in $lines; do\n"
"		[[ -n $line ]] || continue\n"
"		cands+=(\"${line%%$'\\t'*}\")\n"
"		if [[ $line == *$'\\t'* ]]; then\n"
"			descs+=(\"${line%%$'\\t'*}  -- ${line#*$'\\t'}\")\n"
"		else\n"
"			descs+=(\"${line}\")\n"
"		fi\n"
"	done\n"
"	(( ${#cands} )) || return 1\n"
"	compadd -U -V taskdeck -l -d descs -a cands\n"
"}\n"
"if [[ ${zsh_eval_context[-1]-} == loadautofunc ]]; then\n"
"	_taskdeck \"$@\"\n"
"else\n"
"	compdef _taskdeck taskdeck\n"
"fi\n";

static const char completion_fish[] =
"# fish completion for taskdeck:\n"
"#   taskdeck completion fish > ~/.config/fish/completions/taskdeck.fish\n"
"# The candidates come from 'taskdeck __complete WORD...'.\n"
"function __taskdeck_complete\n"
"    set -l tokens (commandline -opc)\n"
"    set -l cur (commandline -ct | string unescape)\n"
"    set -l out ($tokens[1] __complete $tokens[2..-1] \"$cur\" 2>/dev/null)\n"
"    switch \"$out[1]\"\n"
"        case :file\n"
"            __fish_complete_path \"$cur\"\n"
"        case :dir\n"
"            __fish_complete_directories \"$cur\"\n"
"        case '*'\n"
"            printf '%s\\n' $out\n"
"    end\n"
"end\n"
"complete -c taskdeck -f -a '(__taskdeck_complete)'\n";

/* taskdeck completion SHELL */
static int
cmd_completion_exec(struct cli *cli, int argc, char **argv)
{
	static const char *const scripts[] = { completion_bash, completion_zsh, completion_fish };

	(void)argc;
	for (size_t i = 0; cli_shells[i] != NULL; i++) {
		if (strcmp(argv[0], cli_shells[i]) == 0) {
			fputs(scripts[i], stdout);
			return CLI_EXIT_OK;
		}
	}
	return cli_usage_error(cli, "no completion for the shell '%s' (bash, zsh or fish)",
	    argv[0]);
}
