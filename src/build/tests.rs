use super::*;

#[test]
fn setup_args_follow_the_build_system() {
    let autoconf = setup_args(&BuildSettings::default());
    assert!(
        autoconf.contains(&"--enable-depend".to_string()),
        "{autoconf:?}"
    );
    assert!(autoconf.contains(&format!("CFLAGS={DEFAULT_CFLAGS}")));
    let meson = setup_args(&BuildSettings {
        system: BuildSystem::Meson,
        ..BuildSettings::default()
    });
    assert!(meson.contains(&"-Dssl=none".to_string()), "{meson:?}");
}

#[test]
fn settings_from_toml() {
    let s: BuildSettings = toml::from_str(
        "system = \"meson\"\nconfigure = [\"--with-openssl\"]\njobs = 4\n\
         [[fixups]]\npatch = \"p.diff\"\nrange = \"a..b\"\n",
    )
    .unwrap();
    assert_eq!(s.system, BuildSystem::Meson);
    assert_eq!(s.fixups[0].range.as_deref(), Some("a..b"));
    assert!(toml::from_str::<BuildSettings>("colour = 1").is_err());
}

#[test]
fn reserved_options_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let settings = BuildSettings {
        configure: vec!["--prefix=/usr".into()],
        ..BuildSettings::default()
    };
    let err = Builder::new(&LabDirs::under(tmp.path()), settings, 3).unwrap_err();
    assert!(err.to_string().contains("--prefix=/usr"), "{err}");
    let settings = BuildSettings {
        jobs: Some(0),
        ..BuildSettings::default()
    };
    assert!(Builder::new(&LabDirs::under(tmp.path()), settings, 3).is_err());
}

#[test]
fn commit_names_are_checked() {
    assert!(check_commit_name("72a98a639c4bd7ef").is_ok());
    assert!(check_commit_name("../x").is_err());
    assert!(check_commit_name("").is_err());
}

/// A source tree whose `configure` prints a file and fails: no compiler needed.
fn failing_source(dir: &Path) -> PathBuf {
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("a.txt"), "one\n").unwrap();
    crate::testing::write_script(
        &src.join("configure"),
        "#!/bin/sh\necho \"content: $(cat \"$(dirname \"$0\")/a.txt\")\"\n\
         echo 'configure: error: this commit cannot be configured' >&2\nexit 1\n",
    );
    src
}

#[test]
fn a_commit_that_does_not_configure_fails_with_fixups_taken_out() {
    let tmp = tempfile::tempdir().unwrap();
    let src = failing_source(tmp.path());
    let patch = tmp.path().join("fix.patch");
    std::fs::write(
        &patch,
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n",
    )
    .unwrap();
    let settings = BuildSettings {
        fixups: vec![Fixup {
            patch,
            commits: vec!["abc".into()],
            range: None,
        }],
        ..BuildSettings::default()
    };
    let work = tmp.path().join("w");
    let mut builder = Builder::new(&LabDirs::under(&work), settings, 2).unwrap();
    let outcome = builder.ensure("abc123", &src).unwrap();
    let BuildOutcome::Failed { reason, log } = outcome else {
        panic!("{outcome:?}");
    };
    let name = log.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with("build-abc123-") && name.ends_with(".log"),
        "{name}"
    );
    assert_eq!(log.parent(), Some(work.join("logs").as_path()));
    assert!(
        reason.contains("configure: error: this commit cannot"),
        "{reason}"
    );
    assert!(reason.contains(log.to_str().unwrap()), "{reason}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("content: two"), "the fixup was in: {text}");
    assert!(
        text.contains("trying once more in a fresh build tree"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(src.join("a.txt")).unwrap(), "one\n");
    assert_eq!(builder.totals().0, 1);

    // Another commit gets no fixup.
    let (BuildOutcome::Installed { log, .. } | BuildOutcome::Failed { log, .. }) =
        builder.ensure("def456", &src).unwrap();
    let text = std::fs::read_to_string(log).unwrap();
    assert!(text.contains("content: one"), "{text}");
}

#[test]
fn a_build_past_its_timeout_is_a_failed_build_tried_once() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    crate::testing::write_script(&src.join("configure"), "#!/bin/sh\nexec sleep 60\n");
    let settings = BuildSettings {
        timeout: Some(1),
        ..BuildSettings::default()
    };
    let work = tmp.path().join("w");
    let mut builder = Builder::new(&LabDirs::under(&work), settings, 2).unwrap();
    let started = Instant::now();
    let outcome = builder.ensure("slow1", &src).unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let BuildOutcome::Failed { reason, log } = outcome else {
        panic!("{outcome:?}");
    };
    assert!(reason.contains("ran past its deadline of 1 s"), "{reason}");
    let text = std::fs::read_to_string(log).unwrap();
    assert!(!text.contains("trying once more"), "{text}");
    let zero = BuildSettings {
        timeout: Some(0),
        ..BuildSettings::default()
    };
    assert!(Builder::new(&LabDirs::under(&work), zero, 2).is_err());
}

#[test]
fn an_old_tree_gets_its_compatibility_steps_and_a_key_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let grammar = src.join("src/backend/parser/gram.y");
    std::fs::create_dir_all(grammar.parent().unwrap()).unwrap();
    std::fs::write(
        &grammar,
        "#undef yyerror\n#undef yylval\n#undef yylloc\n\n#include \"scan.c\"\n",
    )
    .unwrap();
    // Prints its arguments and the grammar as patched, then fails.
    crate::testing::write_script(
        &src.join("configure"),
        "#!/bin/sh\n# $AWK '{ if ($1 = 2 && $2 = 5 && $3 >= 31) exit 0; else exit 1;}'\n\
         echo \"args: $*\"\ncat \"$(dirname \"$0\")/src/backend/parser/gram.y\"\n\
         echo 'configure: error: stop here' >&2\nexit 1\n",
    );
    let work = tmp.path().join("w");
    let mut builder = Builder::new(&LabDirs::under(&work), BuildSettings::default(), 2).unwrap();
    builder.flex = Some(PathBuf::from("/usr/bin/flex"));
    let outcome = builder.ensure("old1", &src).unwrap();
    let BuildOutcome::Failed { log, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    let text = std::fs::read_to_string(log).unwrap();
    assert!(
        text.contains("compatibility step flex-version-check: configure's flex"),
        "{text}"
    );
    assert!(
        text.contains("compatibility step gram-undef-yylex"),
        "{text}"
    );
    assert!(text.contains("FLEX=/usr/bin/flex"), "{text}");
    assert!(
        text.contains("#undef yylloc\n#undef yylex\n"),
        "patched: {text}"
    );
    let after = std::fs::read_to_string(&grammar).unwrap();
    assert!(!after.contains("yylex"), "the patch is taken out: {after}");
    assert_eq!(
        compat::report_flags(&LabDirs::under(&work), &["old1"]),
        vec![
            "+ FLEX=/usr/bin/flex (old trees: 1 of 1 commits)",
            "+ patch gram-undef-yylex (old trees: 1 of 1 commits)"
        ]
    );

    // The same settings without steps: another install key and build tree.
    let steps = compat::detect(&compat::Tree {
        src: &src,
        settings: &builder.settings,
        fixed_by_user: &[],
        flex: builder.flex.as_deref(),
    });
    assert_ne!(
        builder.install_key(&[], &steps),
        builder.install_key(&[], &[])
    );
    let args = compat::configure_args(&steps, DEFAULT_CFLAGS);
    assert_ne!(builder.tree_key(&args), builder.tree_key(&[]));
}

#[test]
fn a_source_configured_in_place_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir_all(src.join("src")).unwrap();
    std::fs::write(src.join("configure"), "").unwrap();
    std::fs::write(src.join("src/Makefile.global"), "").unwrap();
    let mut builder = Builder::new(
        &LabDirs::under(&tmp.path().join("w")),
        BuildSettings::default(),
        2,
    )
    .unwrap();
    let err = builder.ensure("abc", &src).unwrap_err();
    assert!(matches!(err, BuildError::ConfiguredInTree { .. }), "{err}");
    assert!(err.to_string().contains("make distclean"), "{err}");
    std::fs::remove_file(src.join("src/Makefile.global")).unwrap();
    std::fs::remove_file(src.join("configure")).unwrap();
    let err = builder.ensure("abc", &src).unwrap_err();
    assert!(err.to_string().contains("neither"), "{err}");
}
