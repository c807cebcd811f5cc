//! `completion SHELL`: a completion script for bash, zsh or fish, generated from the command
//! definitions so that it always matches them.

use clap::builder::{PossibleValue, TypedValueParser};
use clap::CommandFactory;
use clap_complete::Shell;

use super::complete_words::Want;
use crate::api::Builtin;

/// The shells `completion` writes scripts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

impl From<CompletionShell> for Shell {
    fn from(shell: CompletionShell) -> Shell {
        match shell {
            CompletionShell::Bash => Shell::Bash,
            CompletionShell::Zsh => Shell::Zsh,
            CompletionShell::Fish => Shell::Fish,
        }
    }
}

/// The completion script for `shell`: clap's, generated from the command definitions, and a
/// wrapper that first asks `kratix-rs __complete` for kinds and object names of the home.
pub fn script(shell: CompletionShell) -> Vec<u8> {
    let mut command = super::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(Shell::from(shell), &mut command, "kratix-rs", &mut out);
    let generated = String::from_utf8_lossy(&out).into_owned();
    let script = match shell {
        // NB: clap_complete 4.6 names the cases of a hyphenated program's subcommands
        // `kratix__subcmd__rs__subcmd__get` but looks them up as `kratix__rs__subcmd__get`, so
        // nothing after a subcommand would complete; the names are made to agree.
        CompletionShell::Bash => format!(
            "{}\n{BASH_DYNAMIC}",
            generated.replace("kratix__subcmd__rs__", "kratix__rs__")
        ),
        CompletionShell::Zsh => match generated.rfind(ZSH_DISPATCH) {
            Some(at) => format!("{}{ZSH_DYNAMIC}", &generated[..at]),
            // NB: clap changed its ending; its own completion still works.
            None => generated,
        },
        CompletionShell::Fish => format!("{generated}\n{FISH_DYNAMIC}"),
    };
    script.into_bytes()
}

/// Kinds and names first; whatever else, clap's completion.
const BASH_DYNAMIC: &str = r#"_kratix_rs_dynamic() {
    local candidates
    if candidates=$(kratix-rs __complete -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null); then
        local IFS=$'\n'
        COMPREPLY=($(compgen -W "$candidates" -- "${COMP_WORDS[COMP_CWORD]}"))
        return 0
    fi
    _kratix__rs "$@"
}
complete -F _kratix_rs_dynamic -o bashdefault -o default kratix-rs
"#;

/// The end of clap's zsh script, replaced by [`ZSH_DYNAMIC`].
const ZSH_DISPATCH: &str = "if [ \"$funcstack[1]\" = \"_kratix-rs\" ]; then";

const ZSH_DYNAMIC: &str = r#"_kratix-rs-dynamic() {
    local out
    if out=$(kratix-rs __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null); then
        local -a candidates
        candidates=(${(f)out})
        compadd -a candidates
        return
    fi
    _kratix-rs "$@"
}

if [ "$funcstack[1]" = "_kratix-rs" ]; then
    # Autoloaded as _kratix-rs, which clap's function has just replaced: complete with the
    # wrapper from now on.
    compdef _kratix-rs-dynamic kratix-rs
    _kratix-rs-dynamic "$@"
else
    compdef _kratix-rs-dynamic kratix-rs
fi
"#;

const FISH_DYNAMIC: &str = r#"function __kratix_rs_dynamic
    kratix-rs __complete -- (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null
end
complete -c kratix-rs -f -n "__kratix_rs_dynamic >/dev/null" -a "(__kratix_rs_dynamic)"
"#;

/// The first argument that makes `kratix-rs` answer the completion scripts (not a clap
/// subcommand, so that it never shows in help or in the generated completions).
pub const COMPLETE: &str = "__complete";

/// `kratix-rs __complete -- WORDS…`: prints the candidates one a line, or exits 1 (silently)
/// when the command definitions complete that word instead, or on any error: a completion
/// must never print an error into the user's command line.
pub async fn complete(args: &[String]) -> std::process::ExitCode {
    let words = match args.first().map(String::as_str) {
        Some("--") => &args[1..],
        _ => args,
    };
    let home = std::env::var_os("KRATIX_HOME").map_or_else(
        || std::path::PathBuf::from("./.kratix"),
        std::path::PathBuf::from,
    );
    match candidates(&home, words).await {
        Ok(Some(candidates)) => {
            for c in &candidates {
                println!("{c}");
            }
            std::process::ExitCode::SUCCESS
        }
        Ok(None) | Err(_) => std::process::ExitCode::FAILURE,
    }
}

/// The candidates for the word being typed (the last of `words`, the command line after the
/// program's name), or `None` when the command definitions complete it instead. Never
/// creates a home: a folder without one has only Kratix's own kinds and no objects.
pub async fn candidates(
    home: &std::path::Path,
    words: &[String],
) -> Result<Option<Vec<String>>, crate::platform::Error> {
    let typed = super::complete_words::typed(words);
    let home = typed
        .home
        .as_deref()
        .map_or_else(|| home.to_path_buf(), std::path::PathBuf::from);
    let platform = || async {
        if home.join("state.db").exists() {
            crate::platform::Platform::open(&home).map(Some)
        } else {
            Ok(None)
        }
    };
    match typed.want {
        Want::Other => Ok(None),
        Want::Kind => {
            let mut kinds: Vec<String> = match platform().await? {
                Some(p) => p.kinds().await?.into_iter().map(|k| k.plural).collect(),
                None => Builtin::ALL
                    .into_iter()
                    .map(|b| b.info().plural.clone())
                    .collect(),
            };
            kinds.sort();
            kinds.dedup();
            Ok(Some(kinds))
        }
        Want::Name { kind, namespace } => {
            let Some(platform) = platform().await? else {
                return Ok(Some(vec![]));
            };
            let Ok(kind) = platform.resolve_kind(&kind).await else {
                return Ok(Some(vec![]));
            };
            let namespace = namespace.filter(|_| kind.namespaced);
            let objects = platform
                .control_plane()
                .list(
                    &kind,
                    namespace.as_deref(),
                    &crate::store::Selector::everything(),
                )
                .await?;
            let mut names: Vec<String> = objects
                .into_iter()
                .filter_map(|o| o.metadata.name)
                .collect();
            names.sort();
            names.dedup();
            Ok(Some(names))
        }
    }
}

/// KIND arguments: any text is accepted (a Promise's API adds kinds at run time), and Kratix's
/// own kinds are offered to shell completion.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct KindParser;

impl TypedValueParser for KindParser {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            Builtin::ALL
                .into_iter()
                .map(|b| PossibleValue::new(b.info().plural)),
        ))
    }
}
