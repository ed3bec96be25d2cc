//! What the command prints: standard output written through one locked,
//! fallible handle (a closed pipe is an error to end on, not a panic), and
//! names shown with their control characters escaped.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::fmt;
use std::io::{IsTerminal, StdoutLock};

/// Work on more tensor data than this shows a progress bar (on a terminal).
const PROGRESS_THRESHOLD: u64 = 64 << 20;

/// A spinner with the elapsed time and `message`, for work on `size` bytes
/// whose progress cannot be counted (MLIR parsing a module): drawn as a
/// progress bar is, ticking on its own.
pub fn spinner(size: u64, message: String) -> ProgressBar {
    let bar = progress_bar(size);
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.set_message(message);
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

/// A progress bar over `total` bytes, drawn on standard error when it is a
/// terminal and the work is large enough to wait for; hidden otherwise (so
/// pipes and logs stay clean). `convert`, `view --stats`, `validate
/// --checksums` of a URL and `from-mlir` show one.
pub fn progress_bar(total: u64) -> ProgressBar {
    let target = if total >= PROGRESS_THRESHOLD && std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(total), target);
    if let Ok(style) = ProgressStyle::with_template(
        "{msg:24!} [{bar:32}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Standard output, locked; every write returns its error.
pub fn stdout() -> StdoutLock<'static> {
    std::io::stdout().lock()
}

/// The status a process killed by SIGPIPE reports in a shell (128 + 13):
/// what `hurray inspect big.hurray | head -1` ends with once `head` exits.
pub const BROKEN_PIPE_STATUS: u8 = 141;

/// Whether `e` is a write to a pipe whose reader has gone.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// A tensor name as printed: control characters, invisible format
/// characters and backslashes escaped (`\n`, `\u{1b}`, `\\`), so a name can neither
/// drive the terminal nor fake a line of output, and every printed name maps
/// back to one stored name.
#[derive(Debug)]
pub struct Shown<'a>(pub &'a str);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            match c {
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                '\\' => f.write_str("\\\\")?,
                c if c.is_control() || is_invisible(c) => write!(f, "\\u{{{:x}}}", u32::from(c))?,
                c => f.write_str(c.encode_utf8(&mut [0; 4]))?,
            }
        }
        Ok(())
    }
}

/// Format characters that reorder or hide text (bidirectional overrides,
/// zero-width characters): shown as `\u{...}` like control characters.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

#[cfg(test)]
mod tests {
    use super::Shown;

    #[test]
    fn control_and_invisible_characters_are_escaped() {
        assert_eq!(Shown("w.0").to_string(), "w.0");
        assert_eq!(Shown("héllo").to_string(), "héllo");
        assert_eq!(Shown("a\nb").to_string(), "a\\nb");
        assert_eq!(
            Shown("\u{1b}]0;pwned\u{7}").to_string(),
            "\\u{1b}]0;pwned\\u{7}"
        );
        assert_eq!(Shown("a\\b").to_string(), "a\\\\b");
        assert_eq!(Shown("x\u{202e}y").to_string(), "x\\u{202e}y");
    }
}
