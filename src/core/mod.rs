//! The pure core: statistics, sequential decisions and the search.
//!
//! Nothing here starts a process, reads a file or looks at the clock, so
//! every rule that decides a verdict is tested with literal numbers and
//! property tests, and the simulator runs it thousands of times a second.

pub mod bisect;
pub mod change_points;
pub mod choose_measure;
pub mod counts;
pub mod decide;
pub mod fingerprint;
pub mod hunt_config;
pub mod outline;
pub mod posterior;
pub mod run_length;
pub mod stats;
pub mod why;
