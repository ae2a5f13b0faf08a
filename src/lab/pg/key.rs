//! The name of a data template: what decides whether a commit's server
//! can open a data directory another commit made.
//!
//! A template is shared by every commit of one key, so the key must change
//! whenever a server would refuse (or misread) the other's data directory:
//! the major version, the catalog version, the control file's version, the
//! WAL format (`XLOG_PAGE_MAGIC`: master changes it without a catalog bump
//! several times a year, and a server of the other format stops at start
//! with "invalid primary checkpoint record"), the SQL initdb runs into every
//! database, the build's configure or meson options (`--with-blocksize`
//! makes another format), the scale and the setup SQL. What it still
//! misses, a server that does not start on a template other programs made
//! gets one made by its own ([`super::runs`]).

use crate::build::BuildSettings;

/// SQL files initdb runs into every new database: views and functions a
/// commit can change without a catalog-version bump (32ff26911 changed the
/// `information_schema.triggers` view so), which the data template must
/// then not share with its parent.
const INITDB_SQL: &[&str] = &[
    "src/backend/catalog/information_schema.sql",
    "src/backend/catalog/system_views.sql",
    "src/backend/catalog/system_functions.sql",
];

/// The header that defines the WAL page magic, since 7.3.
const XLOG_INTERNAL: &str = "src/include/access/xlog_internal.h";

/// The template key of a tree whose files `read` gives (None: missing):
/// `v<version>-cat<catalog>-ctl<control>-wal<magic>-sql<digest>-s<scale>`,
/// then `-b<digest>` for a build with configure or meson options and
/// `-setup<digest>` for setup SQL (of `setup_digest`).
pub(super) fn template_key(
    read: impl Fn(&str) -> anyhow::Result<Option<Vec<u8>>>,
    scale: u32,
    setup_digest: Option<&str>,
    build: &BuildSettings,
) -> anyhow::Result<String> {
    let text = |path: &str| -> anyhow::Result<String> {
        Ok(read(path)?
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default())
    };
    let define = |path: &str, name: &str| -> anyhow::Result<String> {
        Ok(define_value(&text(path)?, name).unwrap_or_else(|| "unknown".into()))
    };
    let catalog = define("src/include/catalog/catversion.h", "CATALOG_VERSION_NO")?;
    let control = define("src/include/catalog/pg_control.h", "PG_CONTROL_VERSION")?;
    let wal = wal_page_magic(&text(XLOG_INTERNAL)?).unwrap_or_else(|| "unknown".into());
    // A new major version starts with the catalog of the last one (the
    // branch point and the commit after it): the server refuses a data
    // directory of another major version, so it names the template too.
    let mut version = String::new();
    for file in ["configure", "meson.build"] {
        if let Some(bytes) = read(file)? {
            version = package_version(&String::from_utf8_lossy(&bytes)).unwrap_or_default();
            break;
        }
    }
    let major = if version.is_empty() {
        String::new()
    } else {
        format!("v{version}-")
    };
    let sql = initdb_sql_digest(&read)?;
    let options = build_options_digest(build)
        .map(|d| format!("-b{d}"))
        .unwrap_or_default();
    let setup = setup_digest
        .map(|d| format!("-setup{}", &d[..d.len().min(8)]))
        .unwrap_or_default();
    Ok(format!(
        "{major}cat{catalog}-ctl{control}-wal{wal}-sql{sql}-s{scale}{options}{setup}"
    ))
}

/// Eight hex digits of a digest of the [`INITDB_SQL`] files `read` gives
/// (those missing count as empty).
fn initdb_sql_digest(
    read: impl Fn(&str) -> anyhow::Result<Option<Vec<u8>>>,
) -> anyhow::Result<String> {
    let mut sql = Vec::new();
    for file in INITDB_SQL {
        sql.extend(read(file)?.unwrap_or_default());
        sql.push(0);
    }
    Ok(crate::server::digest(&sql)[..8].to_string())
}

/// Eight hex digits of a digest of the build's configure and meson
/// options, None without any: block and segment sizes are set there.
fn build_options_digest(build: &BuildSettings) -> Option<String> {
    if build.configure.is_empty() && build.meson.is_empty() {
        return None;
    }
    let text = [build.configure.join("\0"), build.meson.join("\0")].join("\n");
    Some(crate::server::digest(text.as_bytes())[..8].to_string())
}

/// `XLOG_PAGE_MAGIC` of `xlog_internal.h`'s text, in lower-case hex
/// without `0x`: `#define XLOG_PAGE_MAGIC 0xD118 /* can be used as WAL
/// version indicator */` gives `d118`.
fn wal_page_magic(text: &str) -> Option<String> {
    let value = define_value(text, "XLOG_PAGE_MAGIC")?;
    let value = value.split("/*").next().unwrap_or_default();
    let hex = value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"))?
        .trim_end_matches(['u', 'U']);
    (!hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()))
        .then(|| hex.to_ascii_lowercase())
}

/// The version a tree calls itself (`9.6devel`, `18beta1`): `configure`'s
/// `PACKAGE_VERSION='...'`, or `meson.build`'s first `version: '...'`.
pub fn package_version(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let line = line.trim();
        let rest = line
            .strip_prefix("PACKAGE_VERSION=")
            .or_else(|| line.strip_prefix("version:"))?;
        let value = rest.trim().trim_end_matches(',').trim_matches('\'');
        (!value.is_empty()).then(|| value.to_string())
    })
}

/// The value of `#define NAME value` in C header text.
pub fn define_value(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("#define"), Some(n), Some(v)) if n == name => Some(v.to_string()),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree of PostgreSQL 15's headers, its WAL page magic `magic`.
    fn tree(magic: &'static str) -> impl Fn(&str) -> anyhow::Result<Option<Vec<u8>>> {
        move |file: &str| {
            Ok(match file {
                "src/include/catalog/catversion.h" => {
                    Some(b"#define CATALOG_VERSION_NO\t202209061\n".to_vec())
                }
                "src/include/catalog/pg_control.h" => {
                    Some(b"#define PG_CONTROL_VERSION\t1300\n".to_vec())
                }
                "src/include/access/xlog_internal.h" => Some(
                    format!(
                        "/* xlog_internal.h */\n#define XLOG_PAGE_MAGIC {magic}\t\
                         /* can be used as WAL version indicator */\n"
                    )
                    .into_bytes(),
                ),
                "configure" => Some(b"PACKAGE_VERSION='15.4'\n".to_vec()),
                _ => None,
            })
        }
    }

    #[test]
    fn two_trees_differing_only_in_their_wal_page_magic_get_two_keys() {
        let build = BuildSettings::default();
        let before = template_key(tree("0xD110"), 10, None, &build).unwrap();
        let after = template_key(tree("0xD111"), 10, None, &build).unwrap();
        assert_ne!(before, after);
        let sql = initdb_sql_digest(tree("0xD110")).unwrap();
        assert_eq!(
            before,
            format!("v15.4-cat202209061-ctl1300-wald110-sql{sql}-s10")
        );
        assert_eq!(
            before,
            template_key(tree("0xD110"), 10, None, &build).unwrap()
        );
    }

    #[test]
    fn the_build_options_and_setup_sql_name_the_template_too() {
        let plain = BuildSettings::default();
        let small_blocks = BuildSettings {
            configure: vec!["--with-blocksize=4".into()],
            ..BuildSettings::default()
        };
        let a = template_key(tree("0xD110"), 10, None, &plain).unwrap();
        let b = template_key(tree("0xD110"), 10, None, &small_blocks).unwrap();
        let c = template_key(tree("0xD110"), 10, Some("0123456789abcdef"), &plain).unwrap();
        assert!(b.starts_with(&a) && b.contains("-b"), "{b}");
        assert_eq!(c, format!("{a}-setup01234567"));
    }

    #[test]
    fn reads_the_wal_page_magic_as_headers_write_it() {
        let h = |line: &str| format!("#ifndef X\n{line}\n");
        let magic = |line: &str| wal_page_magic(&h(line));
        assert_eq!(
            magic("#define XLOG_PAGE_MAGIC 0xD118\t/* can be used as WAL version indicator */")
                .as_deref(),
            Some("d118")
        );
        assert_eq!(
            magic("#define XLOG_PAGE_MAGIC 0xD066/* old */").as_deref(),
            Some("d066")
        );
        assert_eq!(
            magic("#define XLOG_PAGE_MAGIC\t0xd0a1U").as_deref(),
            Some("d0a1")
        );
        assert_eq!(magic("#define XLOG_PAGE_MAGIC FOO"), None);
        assert_eq!(magic("#define OTHER 0xD118"), None);
    }

    #[test]
    fn a_change_to_the_initdb_sql_alone_makes_another_template() {
        let files = |view: &'static str| {
            move |file: &str| -> anyhow::Result<Option<Vec<u8>>> {
                Ok(match file {
                    "src/backend/catalog/information_schema.sql" => Some(view.into()),
                    "src/backend/catalog/system_views.sql" => Some(b"CREATE VIEW v".to_vec()),
                    _ => None,
                })
            }
        };
        let before = initdb_sql_digest(files("PARTITION BY oid")).unwrap();
        let after = initdb_sql_digest(files("PARTITION BY relname")).unwrap();
        assert_ne!(before, after);
        assert_eq!(before.len(), 8);
        assert_eq!(
            before,
            initdb_sql_digest(files("PARTITION BY oid")).unwrap()
        );
    }

    #[test]
    fn package_versions_from_configure_and_meson() {
        let configure = "PACKAGE_NAME='PostgreSQL'\nPACKAGE_VERSION='9.6devel'\n";
        assert_eq!(package_version(configure).as_deref(), Some("9.6devel"));
        let meson = "project('postgresql',\n  ['c'],\n  version: '19devel',\n)\n";
        assert_eq!(package_version(meson).as_deref(), Some("19devel"));
        assert_eq!(package_version("nothing here\n"), None);
    }

    #[test]
    fn reads_defines() {
        let h = "/* x */\n#define CATALOG_VERSION_NO\t201608131\n";
        assert_eq!(
            define_value(h, "CATALOG_VERSION_NO").as_deref(),
            Some("201608131")
        );
        assert_eq!(define_value(h, "OTHER"), None);
    }
}
