use super::*;

fn set(text: &str) -> CpuSet {
    CpuSet::parse(text).unwrap()
}

/// A fake /sys with `online` CPUs and NUMA nodes `(id, cpulist)`.
fn fake_sys(online: &str, nodes: &[(u32, &str)]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let sys = root.path().join("sys/devices/system");
    std::fs::create_dir_all(sys.join("cpu")).unwrap();
    std::fs::write(sys.join("cpu/online"), format!("{online}\n")).unwrap();
    std::fs::create_dir_all(sys.join("node/power")).unwrap();
    std::fs::write(sys.join("node/possible"), "0-7\n").unwrap();
    for (id, cpus) in nodes {
        let dir = sys.join(format!("node/node{id}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cpulist"), format!("{cpus}\n")).unwrap();
    }
    root
}

fn small_vm() -> Topology {
    Topology::read(fake_sys("0-1", &[(0, "0-1")]).path(), None)
}

/// Seed 000's kind of box: 4 nodes of 16 CPUs.
fn four_nodes() -> Topology {
    let nodes = [(0, "0-15"), (1, "16-31"), (2, "32-47"), (3, "48-63")];
    Topology::read(fake_sys("0-63", &nodes).path(), None)
}

fn auto(topo: &Topology, clients: u32) -> Placement {
    decide(&PlacementSpec::default(), topo, clients).unwrap()
}

#[test]
fn reads_cpus_and_nodes_from_a_fake_sys_tree() {
    let root = fake_sys("0-7", &[(1, "4-7"), (0, "0-3")]);
    let topo = Topology::read(root.path(), None);
    assert_eq!(topo.cpus, set("0-7"));
    assert_eq!(topo.nodes, vec![(0, set("0-3")), (1, set("4-7"))]);
    let narrowed = Topology::read(root.path(), Some(&set("2-5")));
    assert_eq!(narrowed.cpus, set("2-5"));
}

#[test]
fn a_sys_tree_without_nodes_still_has_cpus() {
    let root = tempfile::tempdir().unwrap();
    let topo = Topology::read(root.path(), Some(&set("0-3")));
    assert_eq!(topo.cpus, set("0-3"));
    assert!(topo.nodes.is_empty());
    assert_eq!(Topology::read(root.path(), None).cpus, set("0"));
}

#[test]
fn one_client_on_a_small_machine_shares_one_cpu() {
    let p = auto(&small_vm(), 1);
    assert_eq!(p.mode, "same-cpu");
    assert_eq!(p.server_cpus, Some(set("1")));
    assert_eq!(p.pgbench_cpus, Some(set("1")));
    assert_eq!(p.memory_node, None);
    assert!(
        p.describe()
            .starts_with("same-cpu: server on CPU 1, pgbench on CPU 1 (1 client")
    );
}

#[test]
fn many_clients_on_a_small_machine_are_left_to_the_scheduler() {
    for clients in [2, 8, 128] {
        let p = auto(&small_vm(), clients);
        assert_eq!(p.mode, "none");
        assert_eq!((p.server_cpus, p.pgbench_cpus), (None, None));
    }
}

#[test]
fn clients_that_fit_in_a_node_stay_there_with_pgbench_apart() {
    let p = auto(&four_nodes(), 8);
    assert_eq!(p.mode, "split");
    assert_eq!(p.server_cpus, Some(set("0-11")));
    assert_eq!(p.pgbench_cpus, Some(set("12-15")));
    assert_eq!(p.memory_node, Some(0));
    let one = auto(&four_nodes(), 1);
    assert_eq!(one.server_cpus, Some(set("15")));
    assert_eq!(one.memory_node, Some(0));
}

#[test]
fn clients_beyond_a_node_spread_over_the_machine() {
    let p = auto(&four_nodes(), 128);
    assert_eq!(p.mode, "split");
    assert_eq!(p.server_cpus, Some(set("0-47")));
    assert_eq!(p.pgbench_cpus, Some(set("48-63")));
    assert_eq!(p.memory_node, None);
}

#[test]
fn the_profile_names_the_mode_or_the_cpus() {
    let spec = |mode| PlacementSpec {
        mode: Some(mode),
        ..PlacementSpec::default()
    };
    let split = decide(&spec(Mode::Split), &small_vm(), 1).unwrap();
    assert_eq!(
        (split.server_cpus, split.pgbench_cpus),
        (Some(set("0")), Some(set("1")))
    );
    assert_eq!(split.why, "as the profile says");
    let same = decide(&spec(Mode::SameCpu), &four_nodes(), 64).unwrap();
    assert_eq!(same.server_cpus, Some(set("63")));
    let none = decide(&spec(Mode::None), &four_nodes(), 1).unwrap();
    assert_eq!((none.server_cpus, none.memory_node), (None, None));
    let custom = PlacementSpec {
        server_cpus: Some(set("0")),
        ..PlacementSpec::default()
    };
    let p = decide(&custom, &small_vm(), 4).unwrap();
    assert_eq!(p.mode, "custom");
    assert_eq!((&p.server_cpus, &p.pgbench_cpus), (&Some(set("0")), &None));
    assert!(
        p.describe().contains("pgbench unpinned"),
        "{}",
        p.describe()
    );
}

#[test]
fn a_named_node_binds_cpus_and_memory() {
    let spec = PlacementSpec {
        numa_node: Some(2),
        mode: Some(Mode::None),
        ..PlacementSpec::default()
    };
    let p = decide(&spec, &four_nodes(), 64).unwrap();
    assert_eq!(p.server_cpus, Some(set("32-47")));
    assert_eq!(p.memory_node, Some(2));
    assert!(p.describe().contains("memory on NUMA node 2"));
    let auto_on_node = PlacementSpec {
        numa_node: Some(3),
        ..PlacementSpec::default()
    };
    let p = decide(&auto_on_node, &four_nodes(), 1).unwrap();
    assert_eq!(p.server_cpus, Some(set("63")));
}

#[test]
fn impossible_placements_say_what_is_possible() {
    let far = PlacementSpec {
        pgbench_cpus: Some(set("4-5")),
        ..PlacementSpec::default()
    };
    let message = decide(&far, &small_vm(), 1).unwrap_err().to_string();
    assert!(
        message.contains("pgbench-cpus") && message.contains("0-1"),
        "{message}"
    );
    let node = PlacementSpec {
        numa_node: Some(7),
        ..PlacementSpec::default()
    };
    let message = decide(&node, &four_nodes(), 1).unwrap_err().to_string();
    assert!(message.contains("node 3: CPUs 48-63"), "{message}");
    let one_cpu = Topology {
        cpus: set("0"),
        nodes: vec![],
    };
    let split = PlacementSpec {
        mode: Some(Mode::Split),
        ..PlacementSpec::default()
    };
    let message = decide(&split, &one_cpu, 1).unwrap_err().to_string();
    assert!(message.contains("same-cpu"), "{message}");
}

#[test]
fn a_taskset_around_pgbisect_narrows_the_choice() {
    let root = fake_sys("0-63", &[(0, "0-31"), (1, "32-63")]);
    let topo = Topology::read(root.path(), Some(&set("40-47")));
    let p = auto(&topo, 1);
    assert_eq!(p.server_cpus, Some(set("47")));
    assert_eq!(p.memory_node, Some(1));
}

#[test]
fn profiles_spell_placement_in_toml() {
    let spec: PlacementSpec = toml::from_str(
        "mode = \"split\"\nserver-cpus = \"0-3\"\npgbench-cpus = \"4\"\nnuma-node = 0\n",
    )
    .unwrap();
    assert_eq!(spec.mode, Some(Mode::Split));
    assert_eq!(spec.server_cpus, Some(set("0-3")));
    let bad = toml::from_str::<PlacementSpec>("server-cpus = \"x\"").unwrap_err();
    assert!(bad.to_string().contains("taskset -c"), "{bad}");
    assert!(toml::from_str::<PlacementSpec>("mode = \"pinned\"").is_err());
    assert!(toml::from_str::<PlacementSpec>("cpus = \"0\"").is_err());
}
