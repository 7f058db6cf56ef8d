use super::*;

fn range(s: &str) -> ExpectRange {
    s.parse().unwrap()
}

fn parse_err(text: &str) -> String {
    Spec::parse(text, "test.toml").unwrap_err().to_string()
}

/// The userspace spec has no entry (not even the allocator shims the
/// kernel's describes) and leaves unknown functions unconstrained; a user
/// spec file adds its entries without changing that, and the kernel's
/// default stays "may sleep" whatever is added to it.
#[test]
fn userspace_has_no_kernel_assumption() {
    let mut user = Spec::userspace();
    assert_eq!(user.unknown, Unknown::NoConstraint);
    for name in ["__rust_alloc", "spin_lock", "kmalloc", "msleep"] {
        assert!(user.lookup(name).is_none(), "{name}");
    }
    user.extend(Spec::parse("[fn.blocking_read]\nexpect = \"0\"\n", "user.toml").unwrap());
    assert_eq!(user.unknown, Unknown::NoConstraint);
    assert_eq!(
        user.lookup("blocking_read").map(|s| s.expect),
        Some(range("0"))
    );
    let mut kernel = Spec::builtin_kernel();
    assert_eq!(kernel.unknown, Unknown::MaySleep);
    assert!(kernel.lookup("__rust_alloc").is_some());
    kernel.extend(Spec::userspace());
    assert_eq!(kernel.unknown, Unknown::MaySleep);
}

#[test]
fn builtin_parses() {
    let parsed = Spec::parse(Spec::builtin_kernel_text(), "kernel.toml");
    let spec = parsed.unwrap_or_else(|e| panic!("{e}"));
    assert!(spec.len() > 400, "{}", spec.len());
    let harvested = Spec::parse(HARVESTED_TOML, "kernel-harvested.toml");
    let harvested = harvested.unwrap_or_else(|e| panic!("{e}"));
    assert!(harvested.len() > 150, "{}", harvested.len());
    // Hand-written entries win over harvested ones.
    let builtin = Spec::builtin_kernel();
    assert!(builtin.len() > spec.len());
    for (name, s) in spec.iter() {
        assert_eq!(builtin.lookup(name), Some(s), "{name}");
    }
    for (name, s) in harvested.iter() {
        assert!(
            s.lock.is_some(),
            "{name}: harvested entries are lock effects"
        );
    }
    // Every entry explains itself (shown by `kanalyze summary`).
    for (name, s) in spec.iter() {
        assert!(
            s.note.as_deref().is_some_and(|n| !n.is_empty()),
            "{name} has no note"
        );
    }
}

/// The shape of an entry, for the coverage table below.
#[derive(Debug, PartialEq)]
enum Class {
    /// adjust +1, any entry count.
    Enter,
    /// adjust −1, expects 1...
    Leave,
    /// expects 0.
    Sleeps,
    /// adjust 0, any entry count, no flag condition.
    Any,
    /// adjust 0, `0..` unless the GFP flag allows reclaim.
    Gfp,
    /// adjust 0, `0..`, conditional acquire in `lock`.
    Try,
}

fn class(s: &FnSpec) -> Class {
    let top = s.expect == ExpectRange::TOP;
    match (s.adjust, &s.lock) {
        (1, _) if top => Class::Enter,
        (-1, _) if s.expect == range("1..") => Class::Leave,
        (0, _) if s.expect == range("0") => Class::Sleeps,
        (0, _) if top && s.sleeps_if_flag.is_some() => Class::Gfp,
        (
            0,
            Some(LockEffect {
                op: LockOp::TryAcquire { .. },
                ..
            }),
        ) if top => Class::Try,
        (0, _) if top => Class::Any,
        _ => panic!("unexpected entry {s:?}"),
    }
}

/// The rows of kernel-api.md §2 but row 23 (whose `1..` is no class's, so
/// the test checks it apart): each row's number, the functions it names,
/// and the shape their entries must have.
const KERNEL_API_ROWS: &[(u32, &[&str], Class)] = {
    use Class::*;
    &[
        (1, &["preempt_disable"], Enter),
        (2, &["preempt_enable"], Leave),
        (3, &["preempt_enable_no_resched"], Leave),
        (4, &["get_cpu"], Enter),
        (4, &["put_cpu"], Leave),
        (5, &["get_cpu_ptr", "get_cpu_var"], Enter),
        (5, &["put_cpu_ptr", "put_cpu_var"], Leave),
        (6, &["migrate_disable", "migrate_enable"], Any),
        (7, &["local_bh_disable"], Enter),
        (7, &["local_bh_enable"], Leave),
        (8, &["local_irq_disable"], Enter),
        (8, &["local_irq_enable"], Leave),
        (9, &["local_irq_save"], Enter),
        (9, &["local_irq_restore"], Leave),
        (10, &["local_interrupt_disable"], Enter),
        (10, &["local_interrupt_enable"], Leave),
        (11, &["rcu_read_lock"], Enter),
        (11, &["rcu_read_unlock"], Leave),
        (12, &["rcu_read_lock_bh"], Enter),
        (12, &["rcu_read_unlock_bh"], Leave),
        (13, &["rcu_read_lock_sched"], Enter),
        (13, &["rcu_read_unlock_sched"], Leave),
        (14, &["srcu_read_lock", "srcu_read_unlock"], Any),
        (15, &["local_lock"], Enter),
        (15, &["local_unlock"], Leave),
        (16, &["local_lock_irqsave"], Enter),
        (16, &["local_unlock_irqrestore"], Leave),
        (17, &["kmap_atomic"], Enter),
        (17, &["kunmap_atomic"], Leave),
        (18, &["pagefault_disable", "pagefault_enable"], Any),
        (19, &["in_atomic", "irqs_disabled", "preempt_count"], Any),
        (20, &["might_sleep"], Sleeps),
        (21, &["__might_sleep", "__might_resched"], Sleeps),
        (22, &["might_fault"], Sleeps),
        (24, &["spin_lock"], Enter),
        (24, &["spin_unlock"], Leave),
        (25, &["spin_lock_irq"], Enter),
        (25, &["spin_unlock_irq"], Leave),
        (26, &["spin_lock_irqsave"], Enter),
        (26, &["spin_unlock_irqrestore"], Leave),
        (27, &["spin_lock_bh"], Enter),
        (27, &["spin_unlock_bh"], Leave),
        (28, &["spin_trylock"], Try),
        (
            29,
            &[
                "spin_trylock_irqsave",
                "spin_trylock_irq",
                "spin_trylock_bh",
            ],
            Try,
        ),
        (30, &["spin_lock_nested", "spin_lock_irqsave_nested"], Enter),
        (31, &["spin_lock_irq_disable"], Enter),
        (31, &["spin_unlock_irq_enable"], Leave),
        (32, &["spin_trylock_irq_disable"], Try),
        (33, &["raw_spin_lock"], Enter),
        (33, &["raw_spin_unlock"], Leave),
        (34, &["raw_spin_lock_irqsave", "raw_spin_lock_irq"], Enter),
        (
            34,
            &["raw_spin_unlock_irqrestore", "raw_spin_unlock_irq"],
            Leave,
        ),
        (35, &["read_lock", "write_lock"], Enter),
        (35, &["read_unlock", "write_unlock"], Leave),
        (
            36,
            &[
                "read_lock_irqsave",
                "read_lock_irq",
                "read_lock_bh",
                "write_lock_irqsave",
                "write_lock_irq",
                "write_lock_bh",
            ],
            Enter,
        ),
        (
            36,
            &[
                "read_unlock_irqrestore",
                "read_unlock_irq",
                "read_unlock_bh",
                "write_unlock_irqrestore",
                "write_unlock_irq",
                "write_unlock_bh",
            ],
            Leave,
        ),
        (
            37,
            &["write_seqlock", "write_seqlock_irqsave", "write_seqlock_bh"],
            Enter,
        ),
        (
            37,
            &[
                "write_sequnlock",
                "write_sequnlock_irqrestore",
                "write_sequnlock_bh",
            ],
            Leave,
        ),
        (38, &["bit_spin_lock"], Enter),
        (38, &["bit_spin_unlock"], Leave),
        (39, &["xa_lock", "xa_lock_irq", "xa_lock_bh"], Enter),
        (39, &["xa_unlock", "xa_unlock_irq", "xa_unlock_bh"], Leave),
        (40, &["atomic_dec_and_lock", "refcount_dec_and_lock"], Try),
        (41, &["lockdep_assert_held"], Any),
        (42, &["mutex_lock"], Sleeps),
        // The release side never sleeps (row 42 says so for mutexes; an
        // rwsem's `up_*` only wakes waiters): process context only, which
        // the count cannot tell from holding a spinlock.
        (42, &["mutex_unlock"], Any),
        (
            43,
            &["mutex_lock_interruptible", "mutex_lock_killable"],
            Sleeps,
        ),
        (44, &["mutex_trylock"], Try),
        (45, &["mutex_lock_nested", "mutex_lock_io"], Sleeps),
        (46, &["down"], Sleeps),
        (46, &["up"], Any),
        (
            47,
            &["down_interruptible", "down_killable", "down_timeout"],
            Sleeps,
        ),
        (47, &["down_trylock"], Try),
        (48, &["down_read", "down_write"], Sleeps),
        (48, &["up_read", "up_write"], Any),
        (49, &["down_read_trylock", "down_write_trylock"], Try),
        (50, &["rt_mutex_lock", "rt_mutex_unlock"], Sleeps),
        (51, &["ww_mutex_lock"], Sleeps),
        (51, &["ww_mutex_unlock"], Any),
        (
            52,
            &["percpu_down_read", "percpu_up_read", "percpu_down_write"],
            Sleeps,
        ),
        (
            53,
            &["mmap_read_lock", "mmap_read_unlock", "mmap_write_lock"],
            Sleeps,
        ),
        (54, &["lock_sock", "release_sock"], Sleeps),
        (55, &["i2c_transfer"], Sleeps),
        (56, &["schedule"], Sleeps),
        (
            57,
            &[
                "schedule_timeout",
                "schedule_timeout_interruptible",
                "schedule_timeout_uninterruptible",
                "schedule_timeout_killable",
            ],
            Sleeps,
        ),
        (58, &["io_schedule", "io_schedule_timeout"], Sleeps),
        (59, &["cond_resched", "__cond_resched"], Sleeps),
        (60, &["msleep", "msleep_interruptible", "ssleep"], Sleeps),
        (61, &["usleep_range", "usleep_range_state"], Sleeps),
        (62, &["fsleep"], Sleeps),
        (63, &["udelay", "ndelay", "mdelay"], Any),
        (
            64,
            &[
                "wait_event",
                "wait_event_interruptible",
                "wait_event_timeout",
                "wait_event_killable",
            ],
            Sleeps,
        ),
        (
            65,
            &[
                "wait_for_completion",
                "wait_for_completion_timeout",
                "wait_for_completion_interruptible",
                "wait_for_completion_killable",
            ],
            Sleeps,
        ),
        (66, &["complete", "complete_all"], Any),
        (67, &["__wake_up", "wake_up", "wake_up_process"], Any),
        (
            68,
            &[
                "prepare_to_wait",
                "prepare_to_wait_exclusive",
                "finish_wait",
            ],
            Any,
        ),
        (69, &["kthread_stop"], Sleeps),
        (70, &["kthread_create_on_node", "kthread_run"], Sleeps),
        (
            71,
            &[
                "kmalloc",
                "kzalloc",
                "kcalloc",
                "kmalloc_array",
                "krealloc",
                "krealloc_node_align",
                "kmem_cache_alloc",
            ],
            Gfp,
        ),
        (72, &["alloc_pages", "__get_free_pages"], Gfp),
        (73, &["vmalloc", "vzalloc"], Sleeps),
        (73, &["vrealloc", "__vmalloc_node_range"], Gfp),
        (74, &["kvmalloc", "kvrealloc"], Gfp),
        (75, &["kfree", "kmem_cache_free", "__free_pages"], Any),
        (76, &["vfree", "kvfree"], Sleeps),
        (77, &["dma_alloc_coherent", "dma_alloc_attrs"], Gfp),
        (
            78,
            &[
                "copy_from_user",
                "copy_to_user",
                "_copy_from_user",
                "_copy_to_user",
            ],
            Sleeps,
        ),
        (
            79,
            &["get_user", "put_user", "strncpy_from_user", "clear_user"],
            Sleeps,
        ),
        (
            80,
            &["synchronize_rcu", "synchronize_rcu_expedited"],
            Sleeps,
        ),
        (81, &["rcu_barrier"], Sleeps),
        (
            82,
            &[
                "synchronize_srcu",
                "synchronize_srcu_expedited",
                "cleanup_srcu_struct",
            ],
            Sleeps,
        ),
        (83, &["call_rcu", "kfree_rcu"], Any),
        (84, &["kfree_rcu_mightsleep"], Sleeps),
        (85, &["synchronize_irq"], Sleeps),
        (86, &["disable_irq"], Sleeps),
        (86, &["disable_irq_nosync"], Any),
        (
            87,
            &["free_irq", "request_irq", "request_threaded_irq"],
            Sleeps,
        ),
        (88, &["enable_irq"], Any),
        (
            89,
            &[
                "queue_work_on",
                "queue_delayed_work_on",
                "schedule_work",
                "mod_delayed_work",
            ],
            Any,
        ),
        (90, &["flush_work", "flush_delayed_work"], Sleeps),
        (
            91,
            &["cancel_work_sync", "cancel_delayed_work_sync"],
            Sleeps,
        ),
        (92, &["flush_workqueue", "destroy_workqueue"], Sleeps),
        (93, &["timer_delete_sync", "del_timer_sync"], Any),
        (94, &["hrtimer_cancel"], Any),
        (95, &["mmput"], Sleeps),
        (
            96,
            &[
                "mmput_async",
                "mmdrop",
                "fput",
                "put_task_struct",
                "put_cred",
            ],
            Any,
        ),
        (
            97,
            &["put_device", "platform_device_put", "pci_dev_put"],
            Sleeps,
        ),
        (
            98,
            &[
                "clk_prepare",
                "clk_prepare_enable",
                "clk_unprepare",
                "clk_get",
                "clk_put",
                "clk_get_rate",
            ],
            Sleeps,
        ),
        (99, &["clk_enable", "clk_disable"], Any),
        (100, &["regulator_enable", "regulator_disable"], Sleeps),
        (101, &["gpiod_set_value_cansleep"], Sleeps),
        (101, &["gpiod_set_value"], Any),
        (102, &["ioremap", "iounmap"], Sleeps),
        (102, &["readl", "writel"], Any),
        (103, &["printk", "_printk", "_dev_printk"], Any),
    ]
};

/// Every row of kernel-api.md §2 (103 rows), with every named variant, has
/// an entry of the right shape.
#[test]
fn every_row_of_kernel_api_is_covered() {
    let spec = Spec::builtin_kernel();
    let mut covered = std::collections::BTreeSet::new();
    for (row, names, expected) in KERNEL_API_ROWS {
        for name in *names {
            let Some(s) = spec.lookup(name) else {
                panic!("row {row}: `{name}` is not in the spec")
            };
            assert_eq!(class(s), *expected, "row {row}: `{name}`");
            // Wrapped by a Rust helper, the same entry applies.
            assert_eq!(spec.lookup(&format!("rust_helper_{name}")), Some(s));
        }
        covered.insert(*row);
    }
    // Row 23 (`cant_sleep`) expects 1.., which no class above has.
    assert_eq!(
        spec.lookup("__cant_sleep").map(|s| s.expect),
        Some(range("1.."))
    );
    assert_eq!(
        spec.lookup("cant_sleep").map(|s| s.expect),
        Some(range("1.."))
    );
    covered.insert(23);
    assert_eq!(covered, (1..=103).collect());
}

#[test]
fn lock_effects_and_flags() {
    let spec = Spec::builtin_kernel();
    let lock = |name: &str| spec.lookup(name).and_then(|s| s.lock);
    assert_eq!(
        lock("spin_lock"),
        Some(LockEffect {
            op: LockOp::Acquire,
            arg: Some(0),
            kind: LockKind::Spin
        })
    );
    assert_eq!(
        lock("spin_unlock_irqrestore"),
        Some(LockEffect {
            op: LockOp::Release,
            arg: Some(0),
            kind: LockKind::SpinIrq
        })
    );
    assert_eq!(
        lock("rcu_read_lock"),
        Some(LockEffect {
            op: LockOp::Acquire,
            arg: None,
            kind: LockKind::Rcu
        })
    );
    let try_op = |name: &str| match lock(name) {
        Some(LockEffect {
            op: LockOp::TryAcquire { success },
            ..
        }) => success,
        other => panic!("{name}: {other:?}"),
    };
    assert_eq!(try_op("spin_trylock"), TrySuccess::ReturnsNonZero);
    assert_eq!(try_op("mutex_lock_interruptible"), TrySuccess::ReturnsZero);
    assert_eq!(try_op("down_trylock"), TrySuccess::ReturnsZero);
    assert_eq!(lock("atomic_dec_and_lock").and_then(|l| l.arg), Some(1));
    assert_eq!(lock("bit_spin_lock").and_then(|l| l.arg), Some(1));
    // Trylocks never adjust (see the crate docs).
    for (name, s) in spec.iter() {
        if let Some(LockEffect {
            op: LockOp::TryAcquire { .. },
            ..
        }) = s.lock
        {
            assert_eq!(s.adjust, 0, "{name}");
        }
    }

    let flag = |name: &str| spec.lookup(name).and_then(|s| s.sleeps_if_flag.clone());
    let reclaim = |arg| {
        Some(FlagCondition {
            arg,
            mask: 0x400,
            expect_if_set: ExpectRange::exactly(0),
        })
    };
    assert_eq!(flag("kmalloc"), reclaim(1));
    assert_eq!(flag("krealloc"), reclaim(2));
    assert_eq!(flag("kvmalloc"), reclaim(1));
    assert_eq!(flag("alloc_pages"), reclaim(0));
    assert_eq!(flag("__get_free_pages"), reclaim(0));
    assert_eq!(flag("dma_alloc_coherent"), reclaim(3));
    assert_eq!(flag("kmem_cache_alloc"), reclaim(1));
    assert_eq!(flag("vmalloc"), None);
    for name in [
        "krealloc_node_align",
        "vrealloc_node_align",
        "kvrealloc_node_align",
    ] {
        assert_eq!(flag(&format!("rust_helper_{name}")), reclaim(3), "{name}");
    }
    let zero = |name: &str| spec.lookup(name).and_then(|s| s.sleeps_if_zero);
    assert_eq!(zero("vrealloc_node_align"), Some(1));
    assert_eq!(zero("kvrealloc_node_align"), Some(1));
    assert_eq!(zero("krealloc_node_align"), None);
}

#[test]
fn lookup_order() {
    let spec = Spec::builtin_kernel();
    // Exact.
    assert_eq!(
        spec.lookup_entry("spin_lock").map(|e| e.0),
        Some("spin_lock")
    );
    // `rust_helper_` stripped.
    assert_eq!(
        spec.lookup_entry("rust_helper_spin_lock").map(|e| e.0),
        Some("spin_lock")
    );
    // Globs, on the stripped name too.
    assert_eq!(
        spec.lookup_entry("clk_bulk_enable").map(|e| e.0),
        Some("clk_*")
    );
    assert_eq!(
        spec.lookup_entry("rust_helper_clk_bulk_enable")
            .map(|e| e.0),
        Some("clk_*")
    );
    assert_eq!(
        spec.lookup_entry("__rust_minimal_init").map(|e| e.0),
        Some("__*_init")
    );
    assert_eq!(
        spec.lookup_entry("__my_module_exit").map(|e| e.0),
        Some("__*_exit")
    );
    assert_eq!(
        spec.lookup_entry("llvm.memcpy.p0.p0.i64").map(|e| e.0),
        Some("llvm.*")
    );
    assert_eq!(
        spec.lookup_entry("_RNvCs1QLEhZ2QfLZ_7___rustc12___rust_alloc")
            .map(|e| e.0),
        Some("*__rust_alloc")
    );
    assert_eq!(
        spec.lookup_entry("_RNvCs1QLEhZ2QfLZ_7___rustc14___rust_dealloc")
            .map(|e| e.0),
        Some("*__rust_dealloc")
    );
    // An exact name beats a glob that also matches.
    assert_eq!(
        spec.lookup_entry("clk_enable").map(|e| e.0),
        Some("clk_enable")
    );
    assert_eq!(
        spec.lookup("clk_enable").map(|s| s.expect),
        Some(ExpectRange::TOP)
    );
    assert_eq!(
        spec.lookup_entry("__spin_lock_init").map(|e| e.0),
        Some("__spin_lock_init")
    );
    // Unknown.
    assert_eq!(spec.lookup("some_driver_function"), None);
    assert_eq!(spec.lookup("rust_helper_"), None);
    assert_eq!(spec.lookup(""), None);
}

#[test]
fn globs() {
    assert!(glob_match("clk_*", "clk_"));
    assert!(glob_match("__*_init", "__a_init"));
    assert!(glob_match("__*_init", "__a_init_b_init"));
    assert!(!glob_match("__*_init", "__a_init_b"));
    assert!(glob_match("*a*b*", "xxaxxbxx"));
    assert!(!glob_match("*a*b", "ba"));
    assert!(glob_match("**", ""));
    assert!(!glob_match("x", ""));
    assert!(glob_match("é*", "éé"));
}

#[test]
fn defaults_and_doc_example() {
    let spec = Spec::parse(
        r#"
[fn.spin_lock]
adjust = 1
expect = "0.."
lock = { op = "acquire", arg = 0, kind = "spin" }
note = "takes a spinlock: disables preemption"

[fn.kmalloc]
expect = "0.."
sleeps_if_flag = { arg = 1, mask = 0x400 }   # __GFP_DIRECT_RECLAIM

[fn.msleep]
expect = "0"

[fn.nothing]

[fn]
mutex_trylock = { lock = { op = "try_acquire", arg = 0, kind = "mutex" } }
"my_*" = { expect = "1.." }
"#,
        "doc",
    )
    .unwrap();
    assert_eq!(spec.len(), 6);
    assert_eq!(spec.lookup("nothing"), Some(&FnSpec::default()));
    assert_eq!(
        spec.lookup("spin_lock").map(|s| (s.adjust, s.expect)),
        Some((1, ExpectRange::TOP))
    );
    assert_eq!(spec.lookup("msleep").map(|s| s.expect), Some(range("0")));
    assert_eq!(
        spec.lookup("my_thing").map(|s| s.expect),
        Some(range("1.."))
    );
    assert_eq!(
        spec.lookup("mutex_trylock")
            .and_then(|s| s.lock)
            .map(|l| l.op),
        Some(LockOp::TryAcquire {
            success: TrySuccess::ReturnsNonZero
        })
    );
    assert!(Spec::parse("", "empty").unwrap().is_empty());
}

#[test]
fn extend_overrides() {
    let mut spec = Spec::builtin_kernel();
    let before = spec.len();
    let user = Spec::parse(
        r#"
[fn]
# A kernel where __GFP_DIRECT_RECLAIM moved.
kmalloc = { expect = "0..", sleeps_if_flag = { arg = 1, mask = 0x800 } }
my_driver_sleep = { expect = "0" }
"clk_*" = { expect = "0.." }
"#,
        "user.toml",
    )
    .unwrap();
    spec.extend(user);
    assert_eq!(spec.len(), before + 1);
    assert_eq!(
        spec.lookup("kmalloc")
            .and_then(|s| s.sleeps_if_flag.clone()),
        Some(FlagCondition {
            arg: 1,
            mask: 0x800,
            expect_if_set: ExpectRange::exactly(0),
        })
    );
    assert_eq!(spec.lookup("kmalloc").and_then(|s| s.note.clone()), None);
    assert_eq!(
        spec.lookup("my_driver_sleep").map(|s| s.expect),
        Some(range("0"))
    );
    assert_eq!(
        spec.lookup("clk_bulk_get").map(|s| s.expect),
        Some(ExpectRange::TOP)
    );
    // Untouched entries stay.
    assert_eq!(spec.lookup("spin_lock").map(|s| s.adjust), Some(1));
}

#[test]
fn load_reports_the_path() {
    let dir = std::env::temp_dir().join(format!("spec-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.toml");
    std::fs::write(&good, "[fn.x]\nexpect = \"0\"\n").unwrap();
    assert_eq!(
        Spec::load(&good).unwrap().lookup("x").map(|s| s.expect),
        Some(range("0"))
    );
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[fn.x]\nexpect = \"zero\"\n").unwrap();
    let e = Spec::load(&bad).unwrap_err();
    assert_eq!(
        (e.origin.as_str(), e.line, e.col),
        (bad.to_str().unwrap(), 2, 10)
    );
    let missing = Spec::load(&dir.join("missing.toml")).unwrap_err();
    assert_eq!(missing.line, 0);
    assert!(missing.to_string().starts_with(&format!(
        "{}: cannot read the spec file: ",
        dir.join("missing.toml").display()
    )));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn error_unknown_key() {
    insta::assert_snapshot!(parse_err("[fn.spin_lock]\nadjust = 1\nadjst = 2\n"));
}

#[test]
fn error_unknown_top_level_key() {
    insta::assert_snapshot!(parse_err("[function.spin_lock]\nadjust = 1\n"));
}

#[test]
fn error_unknown_key_in_lock() {
    insta::assert_snapshot!(parse_err(
        "[fn.spin_lock]\nlock = { op = \"acquire\", arg = 0, kind = \"spin\", class = \"x\" }\n"
    ));
}

#[test]
fn error_bad_range() {
    insta::assert_snapshot!(parse_err("[fn.msleep]\nexpect = \"zero\"\n"));
}

#[test]
fn error_empty_range() {
    insta::assert_snapshot!(parse_err("[fn]\nmsleep = { expect = \"2..1\" }\n"));
}

#[test]
fn error_unsatisfiable_range() {
    insta::assert_snapshot!(parse_err("[fn.msleep]\nexpect = \"unsatisfiable\"\n"));
}

#[test]
fn error_bad_kind() {
    insta::assert_snapshot!(parse_err(
        "[fn.spin_lock]\nadjust = 1\nlock = { op = \"acquire\", arg = 0, kind = \"spinlock\" }\n"
    ));
}

#[test]
fn error_bad_op() {
    insta::assert_snapshot!(parse_err(
        "[fn.spin_lock]\nlock = { op = \"take\", arg = 0, kind = \"spin\" }\n"
    ));
}

#[test]
fn error_missing_lock_arg() {
    insta::assert_snapshot!(parse_err(
        "[fn.spin_lock]\nlock = { op = \"acquire\", kind = \"spin\" }\n"
    ));
}

#[test]
fn error_global_lock_with_arg() {
    insta::assert_snapshot!(parse_err(
        "[fn.rcu_read_lock]\nlock = { op = \"acquire\", arg = 0, kind = \"rcu\" }\n"
    ));
}

#[test]
fn error_success_without_try() {
    insta::assert_snapshot!(parse_err(
        "[fn.spin_lock]\nlock = { op = \"acquire\", arg = 0, kind = \"spin\", success = \"zero\" }\n"
    ));
}

#[test]
fn error_bad_success() {
    insta::assert_snapshot!(parse_err(
        "[fn.spin_trylock]\nlock = { op = \"try_acquire\", arg = 0, kind = \"spin\", success = \"one\" }\n"
    ));
}

#[test]
fn error_duplicate_function() {
    insta::assert_snapshot!(parse_err(
        "[fn.msleep]\nexpect = \"0\"\n\n[fn.msleep]\nexpect = \"0..\"\n"
    ));
}

#[test]
fn error_duplicate_function_inline() {
    insta::assert_snapshot!(parse_err(
        "[fn]\nmsleep = {}\nmsleep = { expect = \"0\" }\n"
    ));
}

#[test]
fn error_wrong_type() {
    insta::assert_snapshot!(parse_err("[fn.spin_lock]\nadjust = \"1\"\n"));
}

#[test]
fn error_wrong_type_expect() {
    insta::assert_snapshot!(parse_err("[fn.msleep]\nexpect = 0\n"));
}

#[test]
fn error_wrong_type_function() {
    insta::assert_snapshot!(parse_err("[fn]\nmsleep = \"sleeps\"\n"));
}

#[test]
fn error_adjust_out_of_range() {
    insta::assert_snapshot!(parse_err("[fn.spin_lock]\nadjust = 100000\n"));
}

#[test]
fn error_zero_mask() {
    insta::assert_snapshot!(parse_err(
        "[fn.kmalloc]\nsleeps_if_flag = { arg = 1, mask = 0 }\n"
    ));
}

#[test]
fn error_negative_arg() {
    insta::assert_snapshot!(parse_err(
        "[fn.kmalloc]\nsleeps_if_flag = { arg = -1, mask = 0x400 }\n"
    ));
}

#[test]
fn error_bad_name() {
    insta::assert_snapshot!(parse_err("[fn.\"spin lock\"]\nadjust = 1\n"));
}

#[test]
fn error_toml_syntax() {
    insta::assert_snapshot!(parse_err("[fn.spin_lock\nadjust = 1\n"));
}

#[test]
fn error_duplicate_property() {
    insta::assert_snapshot!(parse_err(
        "[fn]\nmsleep.expect = \"0\"\nmsleep.expect = \"0..\"\n"
    ));
}

#[test]
fn error_context_in_quoted_header() {
    insta::assert_snapshot!(parse_err("[fn.\"clk_*\"]\nexpect = 0\n"));
}

#[test]
fn callbacks_parse() {
    let spec = Spec::parse(
        "[fn]\ncall_rcu = { callbacks = [{ arg = 1, context = \"1..\", role = \"RCU callback\" }] }\nlist_lru_walk = { callbacks = [{ arg = 1, context = \"1\", adjust = [0, -1], role = \"isolate\", hardirq = false }] }\n",
        "test.toml",
    )
    .unwrap();
    let rcu = &spec.lookup("call_rcu").unwrap().callbacks[0];
    assert_eq!(
        (rcu.arg, rcu.contract.adjust.clone(), rcu.contract.hardirq),
        (1, vec![0], false)
    );
    assert_eq!(rcu.contract.context, "1..".parse().unwrap());
    let lru = &spec.lookup("list_lru_walk").unwrap().callbacks[0];
    assert_eq!(lru.contract.adjust, vec![0, -1]);
    // The built-in spec registers IRQ handlers as hard-IRQ callbacks.
    let kernel = Spec::builtin_kernel();
    let irq = &kernel.lookup("request_threaded_irq").unwrap().callbacks;
    assert_eq!(
        irq.iter()
            .map(|c| (c.arg, c.contract.hardirq))
            .collect::<Vec<_>>(),
        vec![(1, true), (2, false)]
    );
}

#[test]
fn error_callback_bad_context() {
    insta::assert_snapshot!(parse_err(
        "[fn]\ncall_rcu = { callbacks = [{ arg = 1, context = \"softirq\", role = \"RCU callback\" }] }\n"
    ));
}

#[test]
fn error_callback_without_role() {
    insta::assert_snapshot!(parse_err(
        "[fn]\ncall_rcu = { callbacks = [{ arg = 1, context = \"1..\" }] }\n"
    ));
}

#[test]
fn error_callback_empty_adjust() {
    insta::assert_snapshot!(parse_err(
        "[fn]\nlist_lru_walk = { callbacks = [{ arg = 1, context = \"1\", adjust = [], role = \"isolate\" }] }\n"
    ));
}

#[test]
fn error_callback_unknown_key() {
    insta::assert_snapshot!(parse_err(
        "[fn]\ncall_rcu = { callbacks = [{ arg = 1, context = \"1..\", role = \"x\", ctx = 1 }] }\n"
    ));
}

#[test]
fn flag_expectation_when_set() {
    let spec = Spec::builtin_kernel();
    let cond = spec
        .lookup("__xa_store")
        .and_then(|s| s.sleeps_if_flag.clone())
        .unwrap();
    // It drops the caller's `xa_lock` to allocate: that lock alone held.
    assert_eq!(cond.expect_if_set, ExpectRange::exactly(1));
}

#[test]
fn error_flag_bad_expect() {
    insta::assert_snapshot!(parse_err(
        "[fn]\n__xa_store = { sleeps_if_flag = { arg = 3, mask = 1024, expect = \"one\" } }\n"
    ));
}

#[test]
fn field_contracts() {
    let spec = Spec::parse(
        "[field]\n\"blk_mq_ops.queue_rq\" = { context = \"1..\", role = \"blk-mq queue_rq\" }\n",
        "test.toml",
    )
    .unwrap();
    let c = spec
        .field("bindings::bindings_raw::blk_mq_ops", "queue_rq")
        .unwrap();
    assert_eq!(
        (c.context, c.adjust.clone()),
        ("1..".parse().unwrap(), vec![0])
    );
    assert!(spec.field("blk_mq_ops", "complete").is_none());
    // The built-in spec knows blk-mq's atomic callbacks.
    let kernel = Spec::builtin_kernel();
    assert!(kernel.field("x::blk_mq_ops", "complete").is_some());
}

#[test]
fn error_field_bad_name() {
    insta::assert_snapshot!(parse_err(
        "[field]\n\"blk_mq_ops\" = { context = \"1..\", role = \"x\" }\n"
    ));
}

#[test]
fn error_field_bad_context() {
    insta::assert_snapshot!(parse_err(
        "[field]\n\"blk_mq_ops.complete\" = { context = \"irq\", role = \"x\" }\n"
    ));
}

#[test]
fn error_field_unknown_key() {
    insta::assert_snapshot!(parse_err(
        "[field]\n\"blk_mq_ops.complete\" = { arg = 1, context = \"1..\", role = \"x\" }\n"
    ));
}

/// The errors of `check_arity` for `text` given the arities.
fn arity_errors(text: &str, arities: &[(&str, u32)]) -> String {
    let spec = Spec::parse(text, "test.toml").unwrap_or_else(|e| panic!("{e}"));
    spec.check_arity(arities.iter().copied())
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn error_arg_past_arity() {
    let text = "[fn]\n\
        spin_lock = { lock = { op = \"acquire\", arg = 99, kind = \"spin\" } }\n\
        kmalloc = { sleeps_if_flag = { arg = 77, mask = 0x400 } }\n\
        call_rcu = { callbacks = [{ arg = 33, context = \"1..\", role = \"RCU callback\" }] }\n\
        vrealloc = { sleeps_if_zero = 5 }\n\
        rb_next = { reads_only = true, returns_into = 4 }\n\
        \"clk_*\" = { lock = { op = \"acquire\", arg = 1, kind = \"spin\" } }\n\
        fine = { lock = { op = \"acquire\", arg = 0, kind = \"spin\" } }\n";
    insta::assert_snapshot!(arity_errors(
        text,
        &[
            ("spin_lock", 1),
            ("kmalloc", 1),
            ("call_rcu", 1),
            ("vrealloc", 3),
            ("rb_next", 1),
            // A glob reports its key once, at the first function by name.
            ("clk_enable", 1),
            ("clk_disable", 0),
            ("fine", 1),
            // Not in the spec, and in range: nothing.
            ("other", 0),
        ]
    ));
    // A function the program does not call (arity unknown) is not checked,
    // and neither is one that takes enough arguments.
    assert_eq!(arity_errors(text, &[("kmalloc", 78), ("fine", 0x7)]), "");
}

/// A later file's entry replaces the earlier one together with its
/// positions; the built-in spec's argument indices fit the kernel's.
#[test]
fn arity_positions_follow_the_entry() {
    let mut spec = Spec::parse(
        "[fn]\nspin_lock = { lock = { op = \"acquire\", arg = 3, kind = \"spin\" } }\n",
        "a.toml",
    )
    .unwrap();
    spec.extend(
        Spec::parse(
            "\n\n[fn]\nspin_lock = { lock = { op = \"acquire\", arg = 2, kind = \"spin\" } }\n",
            "b.toml",
        )
        .unwrap(),
    );
    let errors: Vec<String> = spec
        .check_arity([("spin_lock", 1)])
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(
        errors,
        [
            "b.toml:4:46: function `spin_lock`: `lock.arg = 2` names argument 2 (0-based), \
          but `spin_lock` takes 1 argument"
        ]
    );
    spec.extend(
        Spec::parse(
            "[fn]\nspin_lock = { lock = { op = \"acquire\", arg = 0, kind = \"spin\" } }\n",
            "c.toml",
        )
        .unwrap(),
    );
    assert!(spec.check_arity([("spin_lock", 1)]).is_empty());
}

#[test]
fn error_expect_bound_overflows() {
    insta::assert_snapshot!(parse_err(
        "[fn]\nmsleep = { expect = \"0..=99999999999999999999\" }\n"
    ));
}

/// `[rust]`: a Rust item of the kernel's API by path, and what its result
/// shares with an argument.
#[test]
fn rust_items() {
    let spec = Spec::parse(
        "[rust]\n\"kernel::list::List::<T, ID>::remove\" = { returns_object_of = 1, note = \"ListArc of item\" }\n",
        "test.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = spec.rust_item("kernel::list::List::<T, ID>::remove");
    assert_eq!(r.and_then(|r| r.returns_object_of), Some(1));
    assert_eq!(
        spec.rust_item("kernel::list::List::<T, ID>::push_back"),
        None
    );
    // The built-in spec has the kernel's list.
    assert!(
        Spec::builtin_kernel()
            .rust_item("kernel::list::List::<T, ID>::remove")
            .is_some()
    );
    // A later file's entry replaces the earlier one.
    let mut spec = spec;
    spec.extend(
        Spec::parse(
            "[rust]\n\"kernel::list::List::<T, ID>::remove\" = { returns_object_of = 0 }\n",
            "b.toml",
        )
        .unwrap(),
    );
    assert_eq!(
        spec.rust_item("kernel::list::List::<T, ID>::remove")
            .and_then(|r| r.returns_object_of),
        Some(0)
    );
}

#[test]
fn error_rust_item_path() {
    insta::assert_snapshot!(parse_err("[rust]\nremove = { returns_object_of = 1 }\n"));
}

#[test]
fn error_rust_item_spaces() {
    insta::assert_snapshot!(parse_err(
        "[rust]\n\"kernel::list::List::<T, ID>:: remove now\" = { returns_object_of = 1 }\n"
    ));
}

#[test]
fn error_rust_item_unknown_key() {
    insta::assert_snapshot!(parse_err(
        "[rust]\n\"kernel::list::List::<T, ID>::remove\" = { returns = 1 }\n"
    ));
}

#[test]
fn error_rust_item_arg_past_arity() {
    let spec = Spec::parse(
        "[rust]\n\"kernel::list::List::<T, ID>::remove\" = { returns_object_of = 2 }\n\
         \"kernel::list::List::<T, ID>::pop_front\" = { returns_object_of = 0 }\n",
        "test.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let errors: Vec<String> = spec
        .check_rust_arity([
            ("kernel::list::List::<T, ID>::remove", 2),
            ("kernel::list::List::<T, ID>::pop_front", 1),
            ("kernel::other", 0),
        ])
        .iter()
        .map(|e| e.to_string())
        .collect();
    insta::assert_snapshot!(errors.join("\n"));
}

/// Memory facts of C functions: what they write, where their result
/// points; the built-in spec's tree walkers have them.
#[test]
fn memory_facts() {
    let spec = Spec::parse(
        "[fn]\nwalk = { reads_only = true, returns_into = 1 }\nplain = {}\n",
        "t.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let walk = spec.lookup("walk").unwrap();
    assert!(walk.reads_only);
    assert_eq!(walk.returns_into, Some(1));
    let plain = spec.lookup("plain").unwrap();
    assert!(!plain.reads_only);
    assert_eq!(plain.returns_into, None);
    let kernel = Spec::builtin_kernel();
    for f in ["rb_first", "rb_next", "rb_prev", "rb_last"] {
        let s = kernel.lookup(f).unwrap();
        assert!(s.reads_only && s.returns_into == Some(0), "{f}");
    }
    assert!(!kernel.lookup("rb_erase").unwrap().reads_only);
}

#[test]
fn error_memory_fact_types() {
    insta::assert_snapshot!(parse_err("[fn]\nwalk = { reads_only = 1 }\n"));
    insta::assert_snapshot!(parse_err("[fn]\nwalk = { returns_into = -1 }\n"));
}

/// The built-in kernel spec parses (a broken one would leave every C
/// function unknown), with its `[rust]` facts.
#[test]
fn builtin_kernel_spec_parses() {
    if let Err(e) = Spec::parse(Spec::builtin_kernel_text(), "kernel.toml") {
        panic!("{e}");
    }
    let k = Spec::builtin_kernel();
    let arc = k
        .rust_item("<kernel::sync::arc::Arc<T> as core::ops::deref::Deref>::deref")
        .expect("Arc::deref");
    assert_eq!(arc.points_into_object, Some(0));
    assert_eq!(arc.returns_object_of, None);
    let field = k
        .rust_item("kernel::list::arc_field::ListArcField::<T, ID>::assert_mut")
        .expect("ListArcField::assert_mut");
    assert!(field.exclusive_to_handle);
    let insert = k
        .rust_item("kernel::rbtree::RBTree::<K, V>::insert")
        .expect("RBTree::insert");
    assert_eq!(insert.keeps_argument, Some(1));
    let retain = k
        .rust_item("kernel::alloc::kvec::Vec::<T, A>::retain")
        .expect("Vec::retain");
    assert_eq!(retain.drops_rejected_by, Some(1));
    let drain = k
        .rust_item("<kernel::alloc::kvec::DrainAll<'vec, T> as core::iter::traits::iterator::Iterator>::next")
        .expect("DrainAll::next");
    assert!(drain.empty_after_none);
    let into_iter = k
        .rust_item(
            "<kernel::alloc::kvec::IntoIter<T, A> as core::iter::traits::iterator::Iterator>::next",
        )
        .expect("IntoIter::next");
    assert!(into_iter.empty_after_none);
    assert_eq!(insert.displaces_key_of, Some(1));
    for lookup in ["get", "get_mut", "find_mut"] {
        let r = k
            .rust_item(&format!("kernel::rbtree::RBTree::<K, V>::{lookup}"))
            .unwrap_or_else(|| panic!("RBTree::{lookup}"));
        assert_eq!(r.looks_up_key, Some(1), "{lookup}");
    }
    let node = k
        .rust_item("kernel::rbtree::RBTreeNode::<K, V>::new")
        .expect("RBTreeNode::new");
    assert_eq!((node.node_key, node.returns_argument), (Some(0), Some(1)));
    let reserved = k
        .rust_item("kernel::rbtree::RBTreeNodeReservation::<K, V>::into_node")
        .expect("RBTreeNodeReservation::into_node");
    assert_eq!(reserved.node_key, Some(1));
}

/// The keyed facts `looks_up_key`, `node_key` and `displaces_key_of`: set;
/// 0 for a lookup's key or an insert's node (argument 0 is the map) is an
/// error; an index past the last argument is an error once arities are
/// known.
#[test]
fn rust_item_keyed_facts() {
    let spec = Spec::parse(
        concat!(
            "[rust]\n",
            "\"a::Tree::<K, V>::get\" = { looks_up_key = 1 }\n",
            "\"a::Node::<K, V>::new\" = { node_key = 0 }\n",
            "\"a::Tree::<K, V>::insert\" = { displaces_key_of = 1 }\n",
        ),
        "t.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        spec.rust_item("a::Tree::<K, V>::get").unwrap().looks_up_key,
        Some(1)
    );
    assert_eq!(
        spec.rust_item("a::Node::<K, V>::new").unwrap().node_key,
        Some(0)
    );
    assert_eq!(
        spec.rust_item("a::Tree::<K, V>::insert")
            .unwrap()
            .displaces_key_of,
        Some(1)
    );
    insta::assert_snapshot!(parse_err(
        "[rust]\n\"a::Tree::<K, V>::get\" = { looks_up_key = 0 }\n"
    ));
    insta::assert_snapshot!(parse_err(
        "[rust]\n\"a::Tree::<K, V>::insert\" = { displaces_key_of = 0 }\n"
    ));
    insta::assert_snapshot!(parse_err(
        "[rust]\n\"a::Tree::<K, V>::get\" = { looks_up_key = \"key\" }\n"
    ));
    let errors: Vec<String> = spec
        .check_rust_arity([
            ("a::Tree::<K, V>::get", 1),
            ("a::Node::<K, V>::new", 0),
            ("a::Tree::<K, V>::insert", 2),
        ])
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].contains("looks_up_key = 1"), "{errors:?}");
    assert!(errors[1].contains("node_key = 0"), "{errors:?}");
}

/// `empty_after_none`: set, a `false` alone says nothing, and a value of
/// the wrong type.
#[test]
fn rust_item_empty_after_none() {
    let spec = Spec::parse(
        "[rust]\n\"<a::Drain<'v, T> as core::iter::traits::iterator::Iterator>::next\" = { empty_after_none = true }\n",
        "t.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = spec
        .rust_item("<a::Drain<'v, T> as core::iter::traits::iterator::Iterator>::next")
        .unwrap();
    assert!(r.empty_after_none);
    assert!(!r.exclusive_to_handle);
    insta::assert_snapshot!(parse_err(
        "[rust]\n\"a::Drain::<T>::next\" = { empty_after_none = false }\n"
    ));
    insta::assert_snapshot!(parse_err(
        "[rust]\n\"a::Drain::<T>::next\" = { empty_after_none = \"yes\" }\n"
    ));
}

/// `exclusive_to_handle`: set, a `false` alone says nothing, and a value of
/// the wrong type.
#[test]
fn rust_item_exclusive_to_handle() {
    let spec = Spec::parse(
        "[rust]\n\"a::Field::<T>::get\" = { exclusive_to_handle = true }\n",
        "t.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = spec.rust_item("a::Field::<T>::get").unwrap();
    assert!(r.exclusive_to_handle);
    assert_eq!((r.points_into_object, r.returns_object_of), (None, None));
    insta::assert_snapshot!(parse_err(
        "[rust]\n\"a::Field::<T>::get\" = { exclusive_to_handle = false }\n"
    ));
    insta::assert_snapshot!(parse_err(
        "[rust]\n\"a::Field::<T>::get\" = { exclusive_to_handle = 1 }\n"
    ));
}

/// `returns_argument` and `keeps_argument`: set, `keeps_argument = 0`
/// (argument 0 is the container), and an index past the last argument.
#[test]
fn rust_item_kept_arguments() {
    let spec = Spec::parse(
        "[rust]\n\"a::Node::<V>::new\" = { returns_argument = 1 }\n\"a::Tree::<V>::insert\" = { keeps_argument = 1 }\n",
        "t.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        spec.rust_item("a::Node::<V>::new")
            .unwrap()
            .returns_argument,
        Some(1)
    );
    assert_eq!(
        spec.rust_item("a::Tree::<V>::insert")
            .unwrap()
            .keeps_argument,
        Some(1)
    );
    insta::assert_snapshot!(parse_err(
        "[rust]\n\"a::Tree::<V>::insert\" = { keeps_argument = 0 }\n"
    ));
    let errors: Vec<String> = spec
        .check_rust_arity([("a::Node::<V>::new", 1), ("a::Tree::<V>::insert", 2)])
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("returns_argument = 1"), "{errors:?}");
}

/// `[rust]` `drops_rejected_by`: set, 0 (the container) is an error, an
/// index past the last argument is an error once arities are known.
#[test]
fn rust_item_drops_rejected_by() {
    let spec = Spec::parse(
        "[rust]\n\"a::Vec::<T>::retain\" = { drops_rejected_by = 1 }\n",
        "t.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        spec.rust_item("a::Vec::<T>::retain")
            .unwrap()
            .drops_rejected_by,
        Some(1)
    );
    insta::assert_snapshot!(parse_err(
        "[rust]\n\"a::Vec::<T>::retain\" = { drops_rejected_by = 0 }\n"
    ));
    let errors: Vec<String> = spec
        .check_rust_arity([("a::Vec::<T>::retain", 1)])
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("drops_rejected_by = 1"), "{errors:?}");
}

/// `[rust]` entries: a trait method's item path, `points_into_object`, an
/// entry that says nothing, a malformed trait path.
#[test]
fn rust_item_trait_methods() {
    let spec = Spec::parse(
        "[rust]\n\"<a::Handle<T> as core::ops::deref::Deref>::deref\" = { points_into_object = 0 }\n",
        "t.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = spec
        .rust_item("<a::Handle<T> as core::ops::deref::Deref>::deref")
        .unwrap();
    assert_eq!((r.points_into_object, r.returns_object_of), (Some(0), None));
    insta::assert_snapshot!(parse_err(
        "[rust]\n\"<a::Handle<T> as core::ops::deref::Deref>::deref\" = { note = \"x\" }\n"
    ));
    insta::assert_snapshot!(parse_err(
        "[rust]\n\"<a::Handle<T> core::ops::deref::Deref>::deref\" = { points_into_object = 0 }\n"
    ));
    let errors: Vec<String> = Spec::parse(
        "[rust]\n\"<a::Handle<T> as core::ops::deref::Deref>::deref\" = { points_into_object = 3 }\n",
        "t.toml",
    )
    .unwrap()
    .check_rust_arity([("<a::Handle<T> as core::ops::deref::Deref>::deref", 1)])
    .iter()
    .map(|e| e.to_string())
    .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("points_into_object = 3"), "{errors:?}");
}

/// `[stack]`: a table of its own, looked up like `fn` entries, and never
/// an entry of `fn` (giving a function's stack says nothing of its
/// preemption count).
#[test]
fn stack_table() {
    let spec = Spec::parse(
        "[stack]\ndefault = 512\n[stack.fn]\n_printk = 1800\n\"mutex_*\" = 600\nmutex_lock = 300\n",
        "user.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(spec.stack_default(), Some(512));
    assert_eq!(spec.stack("_printk"), Some(1800));
    assert_eq!(spec.stack("rust_helper_mutex_unlock"), Some(600));
    assert_eq!(spec.stack("mutex_lock"), Some(300));
    assert_eq!(spec.stack("kmalloc"), None);
    assert!(spec.lookup("_printk").is_none());
    assert!(spec.is_empty());

    let mut kernel = Spec::builtin_kernel();
    assert_eq!(kernel.stack_default(), Some(1024));
    kernel.extend(spec);
    assert_eq!(kernel.stack_default(), Some(512));
    assert_eq!(kernel.stack("mutex_trylock"), Some(600));
    // A file without a default keeps the one before it.
    kernel.extend(Spec::parse("[stack.fn]\nkfree = 200\n", "more.toml").unwrap());
    assert_eq!(kernel.stack_default(), Some(512));
    assert_eq!(kernel.stack("kfree"), Some(200));
    assert_eq!(Spec::userspace().stack_default(), None);

    assert_eq!(
        parse_err("[stack]\ndefault = 2147483648\n"),
        "test.toml:2:11: `[stack] default`: 2147483648 bytes of stack is more than the 1073741824 allowed"
    );
    assert!(parse_err("[stack]\ndefault = -1\n").starts_with("test.toml:2:11: "));
    assert!(parse_err("[stack]\nlimit = 1\n").contains("unknown field `limit`"));
    assert_eq!(
        parse_err("[stack.fn]\n\"a b\" = 1\n"),
        "test.toml:2:1: invalid function name `a b`: a link name or a glob pattern with `*` has no whitespace"
    );
}

/// The built-in userspace spec parses, and every entry says something the
/// lock or blocking analysis uses.
#[test]
fn builtin_userspace_parses() {
    let spec = Spec::parse(Spec::builtin_userspace_text(), "userspace.toml")
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(spec.is_empty(), "no C function entries");
    let entries: Vec<_> = spec.rust_lock_entries().collect();
    assert!(entries.len() >= 30, "{}", entries.len());
    assert_eq!(Spec::userspace().rust_lock_entries().count(), entries.len());
    let lock = spec
        .rust_item("std::sync::poison::mutex::Mutex::<T>::lock")
        .and_then(|r| r.lock.clone())
        .unwrap();
    assert_eq!(lock.effect.kind, LockKind::Mutex);
    assert_eq!(lock.effect.op, LockOp::Acquire);
    assert!(
        spec.rust_item("std::thread::functions::sleep")
            .is_some_and(|r| r.blocks && r.lock.is_none())
    );
}

/// An item path's lifetimes do not matter: the impl's own names, `'_` and
/// none at all name one item.
#[test]
fn rust_items_match_without_lifetimes() {
    assert_eq!(
        without_lifetimes("<a::Guard<'a, T> as core::ops::drop::Drop>::drop"),
        "<a::Guard<T> as core::ops::drop::Drop>::drop"
    );
    assert_eq!(
        without_lifetimes("<a::Guard<T, 'x> as b::Tr<'y>>::f"),
        "<a::Guard<T> as b::Tr>::f"
    );
    assert_eq!(without_lifetimes("a::B::<'a>::f"), "a::B::f");
    assert_eq!(without_lifetimes("a::b::c"), "a::b::c");
    let spec = Spec::parse(
        "[rust]\n\"<a::Guard<'rwlock, T> as core::ops::drop::Drop>::drop\" = { lock = { op = \"release\", arg = 0, kind = \"spin\", field = \"lock\" } }\n",
        "t.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = spec
        .rust_item("<a::Guard<'_, T> as core::ops::drop::Drop>::drop")
        .unwrap();
    let lock = r.lock.as_ref().unwrap();
    assert_eq!(lock.fields, ["lock"]);
    assert_eq!(lock.effect.op, LockOp::Release);
}

/// The lock effects of Rust items: each shape, and each mistake with its
/// message.
#[test]
fn rust_item_locks() {
    let spec = Spec::parse(
        "[rust]\n\
         \"a::M::<T>::lock\" = { lock = { op = \"acquire\", arg = 0, kind = \"mutex\", guard = \"lock\" }, blocks = true }\n\
         \"a::M::<T>::try_lock\" = { lock = { op = \"try_acquire\", arg = 0, kind = \"mutex\", success = \"ok\" } }\n\
         \"a::S::<T>::try_lock\" = { lock = { op = \"try_acquire\", arg = 0, kind = \"spin\", success = \"some\", field = \"inner.0\" } }\n\
         \"a::irq::disable\" = { lock = { op = \"acquire\", kind = \"irq\" } }\n",
        "t.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let lock = spec.rust_item("a::M::<T>::lock").unwrap();
    assert!(lock.blocks && lock.has_effect());
    assert_eq!(
        lock.lock.as_ref().and_then(|l| l.guard.as_deref()),
        Some("lock")
    );
    let try_lock = spec.rust_item("a::M::<T>::try_lock").unwrap();
    assert_eq!(
        try_lock.lock.as_ref().map(|l| l.effect.op),
        Some(LockOp::TryAcquire {
            success: TrySuccess::ReturnsOk
        })
    );
    let spin = spec.rust_item("a::S::<T>::try_lock").unwrap();
    assert_eq!(
        spin.lock.as_ref().map(|l| l.fields.clone()),
        Some(vec!["inner".to_string(), "0".to_string()])
    );
    assert_eq!(
        spec.rust_item("a::irq::disable")
            .and_then(|r| r.lock.as_ref())
            .map(|l| l.effect.arg),
        Some(None)
    );
    insta::assert_snapshot!(
        "rust_item_lock_errors",
        [
            // A lock with an object needs the argument it is in.
            "[rust]\n\"a::M::<T>::lock\" = { lock = { op = \"acquire\", kind = \"mutex\" } }\n",
            // A try-lock says how it succeeds.
            "[rust]\n\"a::M::<T>::try_lock\" = { lock = { op = \"try_acquire\", arg = 0, kind = \"mutex\" } }\n",
            "[rust]\n\"a::M::<T>::try_lock\" = { lock = { op = \"try_acquire\", arg = 0, kind = \"mutex\", success = \"nonzero\" } }\n",
            "[rust]\n\"a::M::<T>::lock\" = { lock = { op = \"acquire\", arg = 0, kind = \"mutex\", success = \"ok\" } }\n",
            "[rust]\n\"a::M::<T>::lock\" = { lock = { op = \"acquire\", arg = 0, kind = \"mutex\", field = \"inner..lock\" } }\n",
            "[rust]\n\"a::M::<T>::lock\" = { lock = { op = \"acquire\", arg = 0, kind = \"futex\" } }\n",
            "[rust]\n\"a::G::drop\" = { lock = { op = \"release\", arg = 0, kind = \"mutex\", guard = \"lock\" } }\n",
            "[rust]\n\"a::M::<T>::lock\" = { lock = { op = \"acquire\", arg = 0, kind = \"mutex\", guard = \"a b\" } }\n",
            "[rust]\n\"a::irq::disable\" = { lock = { op = \"acquire\", kind = \"irq\", field = \"x\" } }\n",
            "[rust]\n\"a::M::<T>::lock\" = { blocks = false }\n",
            "[rust]\n\"a::M::<T>::lock\" = { lock = { op = \"acquire\", arg = 0, kind = \"mutex\", class = \"x\" } }\n",
        ]
        .iter()
        .map(|t| parse_err(t))
        .collect::<Vec<_>>()
        .join("\n")
    );
}

/// A `[rust]` lock entry's argument past the function's last is an error
/// once the program says how many arguments the item takes.
#[test]
fn rust_item_lock_arg_past_arity() {
    let spec = Spec::parse(
        "[rust]\n\"a::M::<T>::lock\" = { lock = { op = \"acquire\", arg = 1, kind = \"mutex\" } }\n",
        "t.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let errors = spec.check_rust_arity([("a::M::<T>::lock", 1)]);
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].to_string(),
        "t.toml:2:54: Rust item `a::M::<T>::lock`: `lock.arg = 1` names argument 1 (0-based), but it takes 1 argument"
    );
}

/// The `[rust]` example of docs/locks.md ("Userspace lock APIs") parses
/// and says what the text says.
#[test]
fn locks_doc_example_parses() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/locks.md"))
        .unwrap();
    let section = doc
        .split("A lock another library provides")
        .nth(1)
        .expect("the section of docs/locks.md");
    let block = section
        .split("```toml\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("a toml block");
    let spec = Spec::parse(block, "docs/locks.md").unwrap_or_else(|e| panic!("{e}"));
    let lock = spec.rust_item("mylocks::Ticket::<T>::lock").unwrap();
    assert_eq!(
        lock.lock.as_ref().and_then(|l| l.guard.as_deref()),
        Some("lock")
    );
    assert!(spec.rust_item("mylib::wait_for_irq").unwrap().blocks);
}

/// The built-in embedded spec parses, and extends the userspace one with
/// its critical sections, waits and vector tables.
#[test]
fn builtin_embedded_parses() {
    let own = Spec::parse(Spec::builtin_embedded_text(), "embedded.toml")
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(own.is_empty(), "no C function entries");
    let spec = Spec::embedded();
    assert_eq!(spec.unknown, Unknown::NoConstraint);
    assert_eq!(
        spec.rust_item("cortex_m::interrupt::free")
            .and_then(|r| r.section),
        Some(Section {
            arg: 0,
            kind: LockKind::Irq
        })
    );
    assert!(
        spec.rust_item("cortex_m::asm::wfi")
            .is_some_and(|r| r.blocks)
    );
    // `cortex_m::asm::delay` is a busy loop of a few cycles: not a wait.
    assert!(spec.rust_item("cortex_m::asm::delay").is_none());
    // The userspace spec's locks are there too.
    assert!(
        spec.rust_item("spin::mutex::spin::SpinMutex::<T, R>::lock")
            .is_some()
    );
    let table = spec.static_contract("__INTERRUPTS").unwrap();
    assert!(table.hardirq);
    assert_eq!(table.context, ExpectRange::at_least(1));
    assert!(Spec::userspace().static_contract("__INTERRUPTS").is_none());
}

#[test]
fn sections_are_checked() {
    let spec = Spec::parse(
        "[rust]\n\"fw::with_irqs_off\" = { section = { arg = 1, kind = \"irq\" } }\n",
        "test.toml",
    )
    .unwrap();
    let r = spec.rust_item("fw::with_irqs_off").unwrap();
    assert!(r.has_effect());
    assert_eq!(r.section.map(|s| s.arg), Some(1));
    // The argument index is checked against the item's arity.
    let errors = spec.check_rust_arity([("fw::with_irqs_off", 1)]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].to_string().contains("`section.arg = 1`"),
        "{}",
        errors[0]
    );
    assert_eq!(
        parse_err("[rust]\n\"fw::f\" = { section = { arg = 0, kind = \"spin\" } }\n"),
        "test.toml:2:41: Rust item `fw::f`: `section.kind = \"spin\"` is not a context a section can enter; expected one of `rcu`, `irq`, `bh`, `preempt`"
    );
    assert!(
        parse_err("[rust]\n\"fw::f\" = { section = { kind = \"irq\" } }\n")
            .contains("missing field `arg`")
    );
}

#[test]
fn static_contracts_are_parsed_and_checked() {
    let spec = Spec::parse(
        "[static]\n__VECTORS = { context = \"1..\", hardirq = true, role = \"interrupt handler\" }\n",
        "test.toml",
    )
    .unwrap();
    let c = spec.static_contract("__VECTORS").unwrap();
    assert!(c.hardirq);
    assert_eq!(c.role, "interrupt handler");
    assert!(spec.static_contract("__OTHER").is_none());
    let statics: std::collections::HashSet<&str> = ["__OTHER"].into_iter().collect();
    let unmatched = spec.unmatched(&[], &Default::default(), &Default::default(), &statics);
    assert_eq!(unmatched.len(), 1);
    assert_eq!(unmatched[0].table, "static");
    assert!(
        parse_err("[static]\n__VECTORS = { hardirq = true }\n").contains("missing field `context`")
    );
}

#[test]
fn a_retaken_lock_is_an_acquisition_only() {
    let spec = Spec::parse(
        "[rust]\n\"w::wait\" = { lock = { op = \"acquire\", arg = 1, kind = \"mutex\", field = \"lock\", retakes = true }, blocks = true }\n",
        "test.toml",
    )
    .unwrap();
    let lock = spec
        .rust_item("w::wait")
        .and_then(|r| r.lock.clone())
        .unwrap();
    assert_eq!(lock.across, Some(Across::Retakes));
    assert!(
        parse_err("[rust]\n\"w::f\" = { lock = { op = \"release\", arg = 0, kind = \"mutex\", retakes = true } }\n")
            .contains("`retakes` says the lock held on entry is taken again")
    );
}
