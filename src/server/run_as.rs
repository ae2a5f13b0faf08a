//! Who runs PostgreSQL's programs.
//!
//! PostgreSQL refuses to run as root, while CI machines and many benchmark
//! boxes run everything as root. When we are root, initdb, the server,
//! psql and pgbench run as an unprivileged user instead, and only the
//! directories they must write (data, sockets, logs) are handed to it;
//! the source checkout and the git directory stay root's.

use super::ServerError;
use std::ffi::OsString;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The user taken when we are root and no other is named.
pub const DEFAULT_USER: &str = "postgres";

/// Environment variables that would point libpq or the server elsewhere.
const STRAY_ENV: &[&str] = &[
    "PGHOST",
    "PGHOSTADDR",
    "PGPORT",
    "PGUSER",
    "PGDATABASE",
    "PGOPTIONS",
    "PGSERVICE",
    "PGSERVICEFILE",
    "PGDATA",
    "PGPASSFILE",
    "PGSSLMODE",
];

/// The identity PostgreSQL's programs run under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunAs {
    /// Not root: run as ourselves.
    CurrentUser,
    /// Root: switch to this user in the child before exec.
    User { name: String, uid: u32, gid: u32 },
}

impl RunAs {
    /// Ourselves when not root; otherwise `user` (default `postgres`),
    /// which must exist.
    pub fn resolve(user: Option<&str>) -> Result<RunAs, ServerError> {
        if !is_root() {
            return Ok(RunAs::CurrentUser);
        }
        let name = user.unwrap_or(DEFAULT_USER);
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        match lookup_user(&passwd, name) {
            Some((uid, gid)) if uid != 0 => Ok(RunAs::User {
                name: name.to_string(),
                uid,
                gid,
            }),
            Some(_) => Err(ServerError::RootUser {
                name: name.to_string(),
            }),
            None => Err(ServerError::NoSuchUser {
                name: name.to_string(),
            }),
        }
    }

    /// The uid of the user, when it is not the current one.
    pub fn uid(&self) -> Option<u32> {
        match self {
            RunAs::CurrentUser => None,
            RunAs::User { uid, .. } => Some(*uid),
        }
    }

    /// A name for messages.
    pub fn describe(&self) -> String {
        match self {
            RunAs::CurrentUser => "the current user".to_string(),
            RunAs::User { name, .. } => format!("user `{name}`"),
        }
    }

    /// A command for a PostgreSQL program, run as this identity, with the
    /// libpq environment cleared and `/` as working directory (ours may
    /// be closed to the unprivileged user; all paths given are absolute).
    pub fn command<I, S>(&self, program: &Path, args: I) -> duct::Expression
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let mut expr = duct::cmd(executable(program), args);
        for name in STRAY_ENV {
            expr = expr.env_remove(name);
        }
        // The run's mark, found on the postmaster and all it forks after
        // a kill of pgbisect (see `strays`).
        if let Some(token) = crate::strays::current() {
            expr = expr.env(crate::strays::VAR, token);
        }
        match self {
            RunAs::CurrentUser => expr,
            RunAs::User { name, uid, gid } => {
                let (uid, gid) = (*uid, *gid);
                let home = PathBuf::from("/");
                expr.dir("/")
                    .env("HOME", &home)
                    .env("USER", name)
                    .env("LOGNAME", name)
                    .before_spawn(move |cmd| {
                        use std::os::unix::process::CommandExt;
                        // std drops supplementary groups when it sets the uid.
                        cmd.gid(gid).uid(uid);
                        Ok(())
                    })
            }
        }
    }

    /// Hands `path` (one file or folder, not recursive) to this identity,
    /// without following a link there (see [`RunAs::hand_over_open`]).
    pub fn hand_over(&self, path: &Path) -> Result<(), ServerError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| {
                ServerError::io(
                    format!("cannot hand {} to {}", path.display(), self.describe()),
                    crate::files::explain(path, e),
                )
            })?;
        self.hand_over_open(path, &file)
    }

    /// Hands the open `file` (named `path`) to this identity, through the
    /// open file itself, so that nothing swapped in at `path` meanwhile is
    /// changed: only a folder, or a plain file with no other name, that
    /// belongs to us or already to this identity. A link planted where the
    /// server's folders and logs go would otherwise have root give its
    /// target (`/etc/shadow`) away.
    pub fn hand_over_open(&self, path: &Path, file: &std::fs::File) -> Result<(), ServerError> {
        let refused = |detail: String| ServerError::Refused {
            path: path.to_path_buf(),
            detail: format!("it is not to be handed to {}: {detail}", self.describe()),
        };
        let meta = file
            .metadata()
            .map_err(|e| ServerError::io(format!("cannot read {}", path.display()), e))?;
        if !meta.is_dir() && !meta.is_file() {
            return Err(refused("it is neither a folder nor a plain file".into()));
        }
        if meta.is_file() && meta.nlink() > 1 {
            return Err(refused(format!(
                "it has {} names (hard links): the others would change with it",
                meta.nlink()
            )));
        }
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me && Some(meta.uid()) != self.uid() {
            return Err(refused(format!(
                "it belongs to another user (uid {})",
                meta.uid()
            )));
        }
        match self {
            RunAs::CurrentUser => Ok(()),
            RunAs::User { uid, gid, .. } => std::os::unix::fs::fchown(file, Some(*uid), Some(*gid))
                .map_err(|source| {
                    ServerError::io(
                        format!("cannot hand {} to {}", path.display(), self.describe()),
                        source,
                    )
                }),
        }
    }

    /// Errors unless this identity can walk down to `path` (every ancestor
    /// searchable), the usual trouble with work directories under `/root`.
    pub fn check_reachable(&self, path: &Path) -> Result<(), ServerError> {
        let RunAs::User { uid, gid, .. } = self else {
            return Ok(());
        };
        for dir in path.ancestors().skip(1) {
            let Ok(meta) = std::fs::metadata(dir) else {
                continue;
            };
            let mode = meta.permissions().mode();
            let searchable = if meta.uid() == *uid {
                mode & 0o100 != 0
            } else if meta.gid() == *gid {
                mode & 0o010 != 0
            } else {
                mode & 0o001 != 0
            };
            if !searchable {
                return Err(ServerError::Unreachable {
                    path: path.to_path_buf(),
                    blocked_at: dir.to_path_buf(),
                    who: self.describe(),
                });
            }
        }
        Ok(())
    }
}

/// What to execute for `program`: a bare name is looked up in PATH, a
/// relative path is made absolute (the child may start elsewhere).
fn executable(program: &Path) -> OsString {
    if program.is_absolute() || program.components().count() == 1 {
        return program.as_os_str().to_owned();
    }
    std::path::absolute(program)
        .unwrap_or_else(|_| program.to_path_buf())
        .into_os_string()
}

/// True when the effective user is root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `(uid, gid)` of `name` in a passwd(5) text.
pub fn lookup_user(passwd: &str, name: &str) -> Option<(u32, u32)> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        if fields.next()? != name {
            return None;
        }
        let _password = fields.next()?;
        let uid = fields.next()?.parse().ok()?;
        let gid = fields.next()?.parse().ok()?;
        Some((uid, gid))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_users_in_passwd() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\n\
                      postgres:x:101:104:PostgreSQL administrator,,,:/var/lib/postgresql:/bin/bash\n\
                      broken:x:notanumber:1::/:/bin/false\n";
        assert_eq!(lookup_user(passwd, "postgres"), Some((101, 104)));
        assert_eq!(lookup_user(passwd, "root"), Some((0, 0)));
        assert_eq!(lookup_user(passwd, "post"), None);
        assert_eq!(lookup_user(passwd, "broken"), None);
    }

    #[test]
    fn programs_are_found_in_path_or_made_absolute() {
        assert_eq!(executable(Path::new("cp")), OsString::from("cp"));
        assert_eq!(executable(Path::new("/bin/cp")), OsString::from("/bin/cp"));
        assert!(Path::new(&executable(Path::new("bin/pgbench"))).is_absolute());
    }

    #[test]
    fn links_are_never_handed_over() {
        let tmp = tempfile::tempdir().unwrap();
        let precious = tmp.path().join("precious");
        std::fs::write(&precious, "x").unwrap();
        let link = tmp.path().join("server.log");
        std::os::unix::fs::symlink(&precious, &link).unwrap();
        let err = RunAs::CurrentUser.hand_over(&link).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        std::fs::remove_file(&link).unwrap();
        std::fs::hard_link(&precious, &link).unwrap();
        let err = RunAs::CurrentUser.hand_over(&link).unwrap_err().to_string();
        assert!(
            err.contains("2 names") && err.contains("hint: remove"),
            "{err}"
        );
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(tmp.path(), &link).unwrap();
        assert!(
            RunAs::CurrentUser.hand_over(&link).is_err(),
            "a linked folder"
        );
        let folder = tmp.path().join("sockets");
        std::fs::create_dir(&folder).unwrap();
        RunAs::CurrentUser.hand_over(&folder).unwrap();
        RunAs::CurrentUser.hand_over(&precious).unwrap();
        if is_root() {
            // A file of another user is not given away to a third.
            std::os::unix::fs::chown(&precious, Some(65534), None).unwrap();
            let postgres = RunAs::User {
                name: "pg".into(),
                uid: 65533,
                gid: 65533,
            };
            let err = postgres.hand_over(&precious).unwrap_err().to_string();
            assert!(err.contains("belongs to another user (uid 65534)"), "{err}");
            postgres.hand_over(&folder).unwrap();
            let meta = std::fs::metadata(&folder).unwrap();
            assert_eq!((meta.uid(), meta.gid()), (65533, 65533));
        }
    }

    #[test]
    fn missing_user_says_what_to_do() {
        if !is_root() {
            assert_eq!(
                RunAs::resolve(Some("nobody-here")).unwrap(),
                RunAs::CurrentUser
            );
            return;
        }
        let message = RunAs::resolve(Some("pgbisect-no-such-user"))
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("useradd") && message.contains("--run-as"),
            "{message}"
        );
        assert!(matches!(
            RunAs::resolve(Some("root")),
            Err(ServerError::RootUser { .. })
        ));
    }
}
