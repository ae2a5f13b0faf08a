//! Build settings for servers whose CPU time is profiled.
//!
//! `perf` walks a sampled call stack most cheaply by following frame
//! pointers, and gcc leaves them out at `-O2`: a PostgreSQL built with the
//! default flags gives stacks cut short after the leaf function, so the
//! time spent below `ExecutorStart` cannot be told from the rest. Keeping
//! frame pointers (and, where gcc has the flag, in leaf functions too)
//! costs a percent or two of speed and nothing at build time, and keeps the
//! symbols PostgreSQL installs unstripped enough for `perf` to name every
//! function. Debug information (`-g`, which does not change the code gcc
//! generates) lets the profile name the static functions gcc inlined into
//! their callers, as `exec_bind_message` is into `PostgresMain`
//! (`crate::perf::inline`). The flags go into `CFLAGS`, so they enter the build tree's
//! and the install's key: profiled builds never mix with the ones a hunt's
//! verdicts were measured on.

use super::{BuildSettings, DEFAULT_CFLAGS};

/// The flags added to `CFLAGS` for profiled builds.
pub fn profiling_cflags() -> &'static [&'static str] {
    if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        &[
            "-fno-omit-frame-pointer",
            "-mno-omit-leaf-frame-pointer",
            "-g",
        ]
    } else {
        &["-fno-omit-frame-pointer", "-g"]
    }
}

impl BuildSettings {
    /// These settings with frame pointers kept, for builds whose servers
    /// are profiled; flags already in the profile's `CFLAGS` are not
    /// repeated.
    pub fn for_profiling(&self) -> BuildSettings {
        let base = self.cflags.as_deref().unwrap_or(DEFAULT_CFLAGS);
        let mut cflags = base.to_string();
        for flag in profiling_cflags() {
            if !base.split_whitespace().any(|f| f == *flag) {
                cflags.push(' ');
                cflags.push_str(flag);
            }
        }
        BuildSettings {
            cflags: Some(cflags),
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiling_keeps_the_profile_flags_and_adds_frame_pointers_once() {
        let plain = BuildSettings::default();
        let profiled = plain.for_profiling();
        let cflags = profiled.cflags.clone().unwrap();
        assert!(
            cflags.starts_with("-O2 -fno-omit-frame-pointer"),
            "{cflags}"
        );
        assert_eq!(profiled.for_profiling(), profiled, "added once");

        let tuned = BuildSettings {
            cflags: Some("-O3 -march=native".into()),
            jobs: Some(3),
            ..Default::default()
        };
        let profiled = tuned.for_profiling();
        assert!(
            profiled
                .cflags
                .as_deref()
                .unwrap()
                .starts_with("-O3 -march=native -fno-omit-frame-pointer")
        );
        assert_eq!(profiled.jobs, Some(3));
    }

    #[test]
    fn a_profiled_build_has_a_tree_and_install_key_of_its_own() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = crate::lab::LabDirs::under(tmp.path());
        let plain = super::super::Builder::new(&dirs, BuildSettings::default(), 2).unwrap();
        let profiled =
            super::super::Builder::new(&dirs, BuildSettings::default().for_profiling(), 2).unwrap();
        assert_ne!(plain.tree_key(&[]), profiled.tree_key(&[]));
        assert_ne!(plain.install_key(&[], &[]), profiled.install_key(&[], &[]));
    }
}
