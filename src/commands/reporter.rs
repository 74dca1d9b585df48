//! A move's progress as the user sees it: a bar per phase on a TTY, a confirmation line per
//! object with `-v` (`cluster.cluster.x-k8s.io/a created`), nothing otherwise (pipes,
//! `-o json|yaml`). Notes printed while bars are drawn go above them, so no bar is drawn twice.

use std::sync::Mutex;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::model::ObjectRef;
use crate::mover::progress::{Phase, Progress};
use crate::output::Printer;

/// Draws a move's progress (see the module).
pub struct Reporter {
    bars: Option<MultiProgress>,
    current: Mutex<Option<ProgressBar>>,
    lines: bool,
    printer: Printer,
}

impl Reporter {
    pub fn new(printer: &Printer) -> Reporter {
        Reporter::drawing_to(printer, printer.progress_target())
    }

    /// Bars drawn to `target` when the printer shows progress.
    pub fn drawing_to(printer: &Printer, target: ProgressDrawTarget) -> Reporter {
        Reporter {
            bars: printer
                .progress()
                .then(|| MultiProgress::with_draw_target(target)),
            current: Mutex::new(None),
            lines: printer.verbosity > 0 && !printer.format.is_structured(),
            printer: printer.clone(),
        }
    }

    /// A note for the user, above the bars while they are drawn.
    pub fn note(&self, text: &str) {
        match &self.bars {
            // Printed above the bars: finished phases stay drawn, the live one is redrawn once.
            Some(bars) => {
                if bars.println(text).is_err() {
                    self.printer.note(text);
                }
            }
            None => self.printer.note(text),
        }
    }

    /// The move stopped: the current bar stays as it got, drawn once, and no longer redrawn.
    pub fn stopped(&self) {
        self.settle("stopped");
    }

    /// Replaces the current bar by a plain line above the bars (its phase, how far it got,
    /// `outcome`): a phase that is over is printed once and never redrawn.
    fn settle(&self, outcome: &str) {
        let (Some(bars), Some(bar)) = (&self.bars, self.bar().take()) else {
            return;
        };
        let line = format!(
            "{:>20} {}/{} {outcome} in {}",
            bar.prefix(),
            bar.position(),
            bar.length().unwrap_or(0),
            crate::durations::show_duration(std::time::Duration::from_secs(
                bar.elapsed().as_secs()
            ))
        );
        bar.finish_and_clear();
        bars.remove(&bar);
        if bars.println(&line).is_err() {
            self.printer.note(&line);
        }
    }

    fn bar(&self) -> std::sync::MutexGuard<'_, Option<ProgressBar>> {
        self.current
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Progress for Reporter {
    fn begin(&self, phase: Phase, total: usize) {
        if let Some(bars) = &self.bars {
            let style = ProgressStyle::with_template(
                "{prefix:>20} [{bar:30}] {pos}/{len} {elapsed:>4} {wide_msg}",
            )
            .expect("valid template")
            .progress_chars("=> ");
            let bar = bars.add(
                ProgressBar::new(total as u64)
                    .with_style(style)
                    .with_prefix(phase.label()),
            );
            *self.bar() = Some(bar);
        }
    }

    fn done(&self, phase: Phase, object: &ObjectRef) {
        if let Some(bar) = self.bar().as_ref() {
            bar.inc(1);
            bar.set_message(object.kubectl_name());
        }
        if self.lines {
            self.printer
                .note(&format!("{} {}", object.kubectl_name(), phase.verb()));
        }
    }

    fn end(&self, _: Phase) {
        self.settle("done");
    }

    fn note(&self, text: &str) {
        Reporter::note(self, text);
    }

    fn stopped(&self) {
        Reporter::stopped(self);
    }
}

#[cfg(test)]
mod tests {
    use indicatif::InMemoryTerm;

    use super::*;
    use crate::settings::OutputFormat;

    fn object(name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: "Secret".into(),
            namespace: "ns".into(),
            name: name.into(),
        }
    }

    #[test]
    fn a_stopped_move_leaves_one_line_per_phase() {
        let term = InMemoryTerm::new(20, 120);
        let printer = Printer::plain(OutputFormat::Table).drawing();
        let reporter = Reporter::drawing_to(
            &printer,
            ProgressDrawTarget::term_like(Box::new(term.clone())),
        );
        reporter.begin(Phase::Pause, 2);
        reporter.done(Phase::Pause, &object("a"));
        reporter.done(Phase::Pause, &object("b"));
        reporter.end(Phase::Pause);
        reporter.begin(Phase::Create, 3);
        reporter.done(Phase::Create, &object("a"));
        reporter.note("stopping after the requests in flight");
        reporter.stopped();
        drop(reporter);
        let screen = term.contents();
        for phase in [Phase::Pause, Phase::Create] {
            assert_eq!(
                screen.lines().filter(|l| l.contains(phase.label())).count(),
                1,
                "{screen}"
            );
        }
        assert!(
            screen.contains("1/3"),
            "the stopped phase shows how far it got: {screen}"
        );
        assert_eq!(
            screen.lines().map(str::trim).collect::<Vec<_>>(),
            [
                "pausing source 2/2 done in 0s",
                "stopping after the requests in flight",
                "creating in target 1/3 stopped in 0s",
            ],
            "each phase once, in order, with the note where it happened"
        );
    }
}
