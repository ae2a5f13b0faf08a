//! Short stable content hashes, for cache keys and folder names.
//!
//! A build's cache key and a hunt's folder name must come out the same on
//! every run and every release of pgbisect, or cached installs and
//! resumable hunts are silently stranded: the hash is written out here
//! (FNV-1a) rather than taken from the standard library, whose hasher may
//! change between Rust releases.

/// A short stable hash (FNV-1a, 64 bits) for naming folders after a plan.
pub fn fingerprint(text: &str) -> String {
    digest(text.as_bytes())
}

/// [`fingerprint`] of bytes (16 hex digits): data templates, set-up SQL.
pub fn digest(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_is_stable() {
        assert_eq!(fingerprint(""), "cbf29ce484222325");
        assert_ne!(fingerprint("a"), fingerprint("b"));
    }
}
