//! Renderers of the watcher's output, beside the hunt's: what a night
//! prints ([`night`]), the mail of a hunted change ([`finding`]), the
//! weekly digest ([`digest`]) and the static site ([`site`]), each
//! reading a series' values and changes by its measure ([`measured`]).
//!
//! The watch engine decides what changed, what to hunt and what is owed
//! a reader, and hands the store's rows and its own results here as plain
//! values; each renderer returns text and neither prints, mails nor
//! writes a file. Keeping them on this floor lets the text of a finding or
//! a digest be read, and tested, without a night, a lab or a store, and
//! keeps every message's headers to [`super::email`].

pub mod digest;
pub mod finding;
pub mod measured;
pub mod night;
pub mod site;
