//! Loops over a [`Lab`](crate::lab::Lab): the hunt, a side-by-side
//! comparison, one commit judged against a hunt, a release measured
//! against where it left master, and the simulator.
//!
//! An engine decides what to measure next from the runs so far, using the
//! pure [`core`](crate::core); it knows nothing of flags, work dirs or how
//! a commit is built, so each engine runs in tests against a fake lab.
//! [`session`] is where a command hands its resolved plan over: it takes
//! the work dir's lock, the hosts and the lab, runs an engine and keeps
//! what it found.

pub mod choose_measure;
pub mod compare;
pub mod hunt;
pub mod journaled_run;
pub mod judge;
pub mod release_check;
pub mod session;
pub mod simulate;
pub mod watch;
pub mod why;
