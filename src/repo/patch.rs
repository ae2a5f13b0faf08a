//! Patches as users have them, made readable to git.
//!
//! `compare --patch` takes a patch from a mail or a file: made with `git
//! diff`, `git format-patch`, or plain `diff -u`. Git's patch reader needs
//! the `diff --git` lines, so plain diffs get them here, before the patch
//! is applied in the private work tree ([`super::WorkTree::commit_with_patch`]).

/// A patch as git writes it. Patches made with plain `diff -u` (or
/// `cvs`/`svn diff`) lack the `diff --git` lines git's patch reader needs;
/// these are added, the paths read as `git apply -p1` would. A patch that
/// already has them is returned as it is.
pub fn as_git_diff(patch: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(patch);
    if text.lines().any(|l| l.starts_with("diff --git ")) {
        return patch.to_vec();
    }
    let path_of = |line: &str| -> Option<String> {
        let raw = line.get(4..)?.split('\t').next()?.trim_end();
        if raw == "/dev/null" {
            return None;
        }
        Some(
            raw.split_once('/')
                .map_or(raw, |(_, rest)| rest)
                .to_string(),
        )
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::with_capacity(text.len() + 256);
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let next = lines.get(i + 1).copied().unwrap_or("");
        if !(line.starts_with("--- ") && next.starts_with("+++ ")) {
            out.push_str(line);
            i += 1;
            continue;
        }
        let (old, new) = (path_of(line), path_of(next));
        let Some(path) = new.clone().or(old.clone()) else {
            out.push_str(line);
            i += 1;
            continue;
        };
        out.push_str(&format!("diff --git a/{path} b/{path}\n"));
        match (&old, &new) {
            (None, _) => out.push_str("new file mode 100644\n--- /dev/null\n"),
            (Some(_), None) => out.push_str(&format!("deleted file mode 100644\n--- a/{path}\n")),
            _ => out.push_str(&format!("--- a/{path}\n")),
        }
        match new {
            Some(_) => out.push_str(&format!("+++ b/{path}\n")),
            None => out.push_str("+++ /dev/null\n"),
        }
        i += 2;
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_diffs_get_git_headers() {
        let plain = "Some words\n--- pg.orig/src/a.c\t2016-01-01 10:00:00\n+++ pg/src/a.c\t2016-01-02\n@@ -1 +1 @@\n-x\n+y\n\
                     --- /dev/null\n+++ pg/src/new.h\n@@ -0,0 +1 @@\n+z\n";
        let git = String::from_utf8(as_git_diff(plain.as_bytes())).unwrap();
        assert!(
            git.starts_with(
                "Some words\ndiff --git a/src/a.c b/src/a.c\n--- a/src/a.c\n+++ b/src/a.c\n@@"
            ),
            "{git}"
        );
        assert!(git.contains("diff --git a/src/new.h b/src/new.h\nnew file mode 100644\n--- /dev/null\n+++ b/src/new.h\n"), "{git}");
        let already = "diff --git a/x b/x\n--- a/x\n+++ b/x\n";
        assert_eq!(as_git_diff(already.as_bytes()), already.as_bytes());
    }
}
