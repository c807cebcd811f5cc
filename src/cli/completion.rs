//! `completion SHELL`: a completion script for bash, zsh or fish, generated from the command
//! definitions so that it always matches them.

use clap::builder::{PossibleValue, TypedValueParser};
use clap::CommandFactory;
use clap_complete::Shell;

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

/// The completion script for `shell`.
pub fn script(shell: CompletionShell) -> Vec<u8> {
    let mut command = super::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(Shell::from(shell), &mut command, "kratix-rs", &mut out);
    out
}

/// KIND arguments: any text is accepted (a Promise's API adds kinds at run time), and Kratix's
/// own kinds are offered to shell completion.
#[derive(Debug, Clone, Copy, Default)]
pub struct KindParser;

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
