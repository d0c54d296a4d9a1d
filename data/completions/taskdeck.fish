# fish completion for taskdeck (installed by `make install` into
# $(datadir)/fish/vendor_completions.d/taskdeck.fish).
set -l cmds artifacts connectors credentials daemon dashboard defaults demo doctor events install-cli permissions plan projects routing run runs runtimes sessions setup
complete -c taskdeck -f
complete -c taskdeck -n "not __fish_seen_subcommand_from $cmds" -a "$cmds"
complete -c taskdeck -n "__fish_seen_subcommand_from artifacts" -a "list show download"
complete -c taskdeck -n "__fish_seen_subcommand_from connectors" -a "list show add update enable disable remove test login"
complete -c taskdeck -n "__fish_seen_subcommand_from credentials" -a "list show create update delete"
complete -c taskdeck -n "__fish_seen_subcommand_from daemon" -a "start stop status"
complete -c taskdeck -n "__fish_seen_subcommand_from defaults routing" -a "get set"
complete -c taskdeck -n "__fish_seen_subcommand_from permissions" -a "list show allow deny"
complete -c taskdeck -n "__fish_seen_subcommand_from plan" -a "show approve revise reject"
complete -c taskdeck -n "__fish_seen_subcommand_from projects" -a "list show create update"
complete -c taskdeck -n "__fish_seen_subcommand_from runs" -a "list show wait cancel logs watch changes diff revert"
complete -c taskdeck -n "__fish_seen_subcommand_from sessions" -a "list show config"
complete -c taskdeck -l json -d "print the service's JSON"
complete -c taskdeck -l timeout -r -d "deadline of each request (ms)"
complete -c taskdeck -l help -d "show help"
