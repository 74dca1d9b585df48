//! A wall clock that steps, for the plugin's processes: `clock_step.c`, built once per test run
//! with the system's C compiler and loaded with `LD_PRELOAD`, adds the seconds a file holds to
//! `CLOCK_REALTIME` — the clock NTP `makestep` or a resumed VM steps. Rewriting the file steps
//! every running process of a world at once.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::move_world::{Fixture, MOVE_NS1, World};

/// The built shim (kept for the test run).
fn shim() -> &'static Path {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = BUILT.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let library = dir.path().join("libclockstep.so");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/clock_step.c");
        let built = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&library)
            .arg(&source)
            .arg("-ldl")
            .output()
            .expect("a C compiler (cc) builds the clock shim");
        assert!(
            built.status.success(),
            "cc: {}",
            String::from_utf8_lossy(&built.stderr)
        );
        (dir, library)
    });
    path
}

/// The wall clock of a world's commands, stepped by [`SteppedClock::step`].
pub struct SteppedClock {
    file: PathBuf,
}

impl SteppedClock {
    /// From now on every command of `world` runs `seconds` off the true wall clock.
    pub fn install(world: &World, seconds: i64) -> SteppedClock {
        let clock = SteppedClock {
            file: world.dir.path().join("clock-step"),
        };
        clock.step(seconds);
        world.set_env("LD_PRELOAD", shim().to_str().unwrap());
        world.set_env("CLOCK_STEP_FILE", clock.file.to_str().unwrap());
        clock
    }

    /// Steps the wall clock of every command, running ones included, to `seconds` off.
    pub fn step(&self, seconds: i64) {
        // Written whole, then renamed: a process never reads half a number.
        let partial = self.file.with_extension("partial");
        std::fs::write(&partial, seconds.to_string()).unwrap();
        std::fs::rename(&partial, &self.file).unwrap();
    }
}

/// The shim steps what the plugin reads as the wall clock, and only that: a move run a year
/// ahead records its times a year ahead, and still moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shim_steps_a_commands_wall_clock() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    SteppedClock::install(&w, 366 * 24 * 3600);
    let out = w.plugin(&MOVE_NS1).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let journal = crate::move_world::local_journal(&w);
    let year_ahead = (jiff::Timestamp::now()
        .strftime("%Y")
        .to_string()
        .parse::<i32>()
        .unwrap()
        + 1)
    .to_string();
    assert!(
        journal.to_string().contains(&format!("\"{year_ahead}-")),
        "the journal's times are a year ahead: {journal}"
    );
}
