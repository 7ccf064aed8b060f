//! `ekscale-autoscaler demo` as a process: the built-in day on a fixed seed, its summary and HTML report, a
//! user's own script, and bad scripts refused.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn demo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ekscale-autoscaler"))
        .arg("demo")
        .args(args)
        .output()
        .expect("running ekscale-autoscaler demo")
}

/// The `+added -removed` of a group in the summary.
fn added_removed(summary: &str, group: &str) -> (u64, u64) {
    let line = summary
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{group} ")))
        .unwrap_or_else(|| panic!("no line for {group}:\n{summary}"));
    let mut numbers = line
        .split_whitespace()
        .skip(1)
        .take(2)
        .map(|n| n[1..].parse::<u64>().unwrap());
    (numbers.next().unwrap(), numbers.next().unwrap())
}

#[test]
fn the_built_in_day_places_what_fits_explains_what_does_not_and_scales_back_down() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.html");
    let output = demo(&[
        "--speed",
        "0",
        "--seed",
        "7",
        "--report",
        report.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary = &stdout[stdout.find("Summary:").expect("a summary")..];
    // The simulated cluster binds by the plain rules: the companion's placement agreed with them all day,
    // every day played.
    assert_eq!(
        summary
            .matches("disagreements between the companion's predicates and the plain scheduler: 0")
            .count(),
        4,
        "{summary}"
    );

    // Every placeable workload ran; the 64-CPU pod is reported with every group's reason.
    for workload in ["default/api", "default/web", "default/etl", "serverless/fn"] {
        let line = summary
            .lines()
            .find(|l| l.trim_start().starts_with(workload))
            .unwrap();
        assert!(!line.contains("never"), "{line}");
    }
    assert!(
        summary.contains("pods placed on EC2 nodes: 28; on Fargate: 3"),
        "{summary}"
    );
    assert!(summary.contains("serverless/fn-0 on Fargate (profile serverless): 0.5vCPU 2GB"));
    assert!(summary.contains("never placed: default/huge-0"));
    assert!(summary.contains(
        "general: Insufficient cpu, Insufficient memory: the pod requests 64 cpu, 8Gi memory"
    ));
    assert!(summary.contains("default/huge (1 pods): never"));

    // The burst and the batch job came and went: nodes were added, then removed after they ended.
    let (general_added, general_removed) = added_removed(summary, "general");
    let (batch_added, batch_removed) = added_removed(summary, "batch");
    assert!(
        general_added >= 3 && general_removed >= general_added,
        "{summary}"
    );
    assert!(
        batch_added >= 1 && batch_removed == batch_added,
        "{summary}"
    );
    assert!(
        summary.contains("headroom web-buffer (general): 2 pod(s) of 500m/1Gi: 2 fit in free room"),
        "{summary}"
    );
    // The CapacityBuffers: one chunk from a PodTemplate all day; a fifth of web's replicas, rounded up, while
    // web runs (14 replicas: 3 chunks), none once its HPA scaled it in.
    assert!(
        summary.contains(
            "capacity buffer default/api-spare: 1 chunk(s) of 250m/512Mi: 1 in free room, 0 in this loop's \
             scale-ups, 0 unmet; ReadyForProvisioning True (AttributesSetSuccessfully), Provisioning True \
             (FakePodsInjected)"
        ),
        "{summary}"
    );
    assert!(
        summary.contains("capacity buffer default/web-burst: 0 chunk(s) of 500m/1Gi"),
        "{summary}"
    );
    assert!(
        summary.contains("Provisioning False (BufferIsEmpty): CapacityBuffer has zero replicas"),
        "{summary}"
    );
    let burst = stdout.find("capacity buffer   default/web-burst: 3 chunk(s) of 500m/1Gi");
    let gone = stdout.find("capacity buffer   default/web-burst: 0 chunk(s) of 500m/1Gi");
    assert!(burst.is_some() && gone > burst, "{stdout}");
    // The training job's ProvisioningRequest: refused whole while the stockout lets only 2 of its 3 GPU nodes
    // start (nothing half-built: gpu grew once, by 3), provisioned whole once it ended, its booking over
    // ten minutes later; the log marks each moment, and its workers ran at once on the booked nodes.
    let said = |text: &str| {
        stdout
            .lines()
            .find(|l| l.contains(text))
            .unwrap_or_else(|| panic!("no {text:?} in {stdout}"))
            .to_string()
    };
    assert!(
        said("provisioning req  ml/train: pending (CapacityIsNotFound)").starts_with("[00:30:00]")
    );
    assert!(
        said("ml/train: pending (CapacityIsNotFound)")
            .contains("can launch 2 more instance(s) now")
    );
    let provisioned = said(
        "provisioning req  ml/train: provisioned (CapacityIsProvisioned), gpu +3 all or nothing",
    );
    let expired =
        said("provisioning req  ml/train: bookingExpired (CapacityReservationTimeExpired)");
    assert!(
        provisioned[1..9] > *"00:34:00" && expired[1..9] > provisioned[1..9],
        "{provisioned}\n{expired}"
    );
    let gpu_scale_ups: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("] scale-up          gpu "))
        .collect();
    assert_eq!(gpu_scale_ups.len(), 2, "{gpu_scale_ups:?}");
    assert!(
        gpu_scale_ups[0]
            .contains("gpu +3 node(s) for 3 pod(s): ProvisioningRequest ml/train (all or nothing)")
    );
    assert!(summary.contains("ml/trainer (3 pods): 0s"), "{summary}");
    // The GPU pool's quota (3 GPUs) holds the training job's 3 nodes: the second job's request, made while
    // they run, is refused whole, its status naming the quota with its figures (the group's max size, 4,
    // would have let one more node in); it is deleted with its job, and gpu never grew for it.
    let eval = said("provisioning req  ml/eval: pending (CapacityIsNotFound)");
    assert!(eval.starts_with("[00:42:00]"), "{eval}");
    assert!(
        eval.contains(
            "gpu: exceeded quota: \"CapacityQuota/gpu-pool\", resources: nvidia.com/gpu (nvidia.com/gpu \
             used 3 of 3, a node adds 1)"
        ),
        "{eval}"
    );
    assert!(said("eval pods and ProvisioningRequest deleted").starts_with("[00:46:00]"));
    // The DRA scene: once the training nodes are gone, the render job's pods claim a Turing GPU each from a
    // template; gpu scales from zero for their claims (one T4 a node: two nodes), they run, and the nodes go
    // after the job. gpu added 5 nodes in all, and removed them.
    assert!(
        gpu_scale_ups[1].starts_with("[01:01:00]")
            && gpu_scale_ups[1].contains("gpu +2 node(s) for 2 pod(s)"),
        "{gpu_scale_ups:?}"
    );
    let render = summary
        .lines()
        .find(|l| l.trim_start().starts_with("ml/render (2 pods)"))
        .unwrap_or_else(|| panic!("no render job in {summary}"));
    assert!(!render.contains("never"), "{render}");
    assert_eq!(added_removed(summary, "gpu"), (5, 5), "{summary}");

    // Decisions were printed as they happened, with their reasons.
    assert!(stdout.contains("scale-up          general +"), "{stdout}");
    assert!(stdout.contains("scale-down        ip-"), "{stdout}");
    assert!(stdout.contains("fargate           serverless/fn-0 -> profile serverless"));

    // The second day, played with consolidation off and on: the burst went to on-demand nodes while spot
    // was dry; once spot freed up, pairs of them were merged onto spot nodes, and the day cost less.
    let day2 = &summary[summary.find("Day 2").expect("the second day")..];
    let cost = |label: &str| -> f64 {
        let line = day2
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap();
        line.split('$')
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (off, on) = (cost("consolidation off:"), cost("consolidation replace:"));
    assert!(on < off * 0.8, "{day2}");
    let merges = day2.lines().filter(|l| {
        l.contains("(general, general) -> a new spot node (m5.xlarge)") && l.contains("; done at")
    });
    assert!(merges.count() >= 2, "{day2}");
    // Tried while the pool was dry, a replacement is given up at once, the old nodes untouched.
    for line in day2.lines().filter(|l| l.contains("; abandoned at")) {
        assert!(line.contains("could not be launched"), "{line}");
    }
    // The last line is the one scripts read.
    let last = stdout.trim_end().lines().last().unwrap();
    let fields: Vec<&str> = last
        .strip_prefix("demo summary: ")
        .expect(last)
        .split(' ')
        .collect();
    let keys: Vec<&str> = fields
        .iter()
        .map(|f| f.split('=').next().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "added",
            "removed",
            "placed",
            "fargate",
            "unschedulable",
            "steady_after"
        ]
    );
    let value = |k: usize| fields[k].split('=').nth(1).unwrap();
    assert_eq!(
        value(2),
        "31/32",
        "every pod but the 64-CPU one ran: {last}"
    );
    assert_eq!((value(3), value(4)), ("3", "1"), "{last}");
    let added: u64 = value(0).parse().unwrap();
    let removed: u64 = value(1).parse().unwrap();
    assert!(
        added >= general_added + batch_added && removed == added,
        "{last}"
    );
    let steady: u64 = value(5).strip_suffix('s').unwrap().parse().unwrap();
    assert!(
        (25 * 60..75 * 60).contains(&steady),
        "steady after the burst ended (25m): {last}"
    );

    // The report: one self-contained page, five charts of the day and one of the second day's cost, well-formed
    // SVG with a point per loop.
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        !html.contains("<script") && !html.contains("src=\"http"),
        "no network"
    );
    let loops = summary
        .lines()
        .find_map(|l| l.split(" over ").nth(1)?.strip_suffix(" loops"))
        .unwrap()
        .parse::<usize>()
        .unwrap();
    let mut charts = 0;
    let mut rest = html.as_str();
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").unwrap() + start + "</svg>".len();
        let svg = &rest[start..end];
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}: {svg}"));
        let lines: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("polyline"))
            .collect();
        assert!(!lines.is_empty());
        // The second day: 4 hours, a loop every 30 s; the third: 17 hours, a loop a minute; the fourth: 45
        // minutes, a loop every 15 s.
        let expected = match charts {
            0..5 => loops,
            5 => 4 * 120 + 1,
            6 => 17 * 60 + 1,
            _ => 45 * 4 + 1,
        };
        for line in lines {
            let points = line.attribute("points").unwrap().split_whitespace().count();
            assert_eq!(points, expected, "a point per loop");
        }
        charts += 1;
        rest = &rest[end..];
    }
    assert_eq!(
        charts, 8,
        "nodes, pending, utilization, buffers, cost; day 2's cost; day 3's nodes; day 4's pending pods"
    );
    for title in [
        "Nodes per node group",
        "Pending pods",
        "CPU utilization",
        "Capacity buffers",
        "Cost",
        "Day 2: cost with consolidation off and on",
        "Decisions with consolidation on",
        "Day 3: nodes per node group",
        "Day 4: pending pods with leaving nodes handled and ignored",
    ] {
        assert!(html.contains(title), "{title}");
    }
    assert!(html.contains("<td>scale-down</td>"));
    assert!(html.contains("never placed: default/huge-0"));
    third_day_holds_and_replaces(summary, &html);
    fourth_day_keeps_pods_running(summary, &html);

    // And it renders: headless Chromium builds the same six charts from it, and its screenshot holds far
    // more than an empty page's.
    let url = format!("file://{}", report.display());
    let dom = chromium(&["--dump-dom", &url]);
    assert_eq!(dom.matches("<svg").count(), 8, "{dom}");
    assert!(dom.matches("<polyline").count() >= 6 + record_groups(&html));
    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let shot = |page: &Path, name: &str| {
        let png = dir.path().join(name);
        chromium(&[
            &format!("--screenshot={}", png.display()),
            "--window-size=900,1600",
            &format!("file://{}", page.display()),
        ]);
        std::fs::metadata(&png)
            .unwrap_or_else(|e| panic!("no screenshot {name}: {e}"))
            .len()
    };
    let (page, empty) = (shot(&report, "report.png"), shot(&blank, "blank.png"));
    assert!(
        page > 4 * empty,
        "report {page} bytes, blank page {empty} bytes"
    );
}

/// The third day, with disruption control: office hours (09:00 to 17:00 in Berlin, the day starting at 15:00
/// there) hold general's idle nodes until 17:00, 02:00:00 into the day; nothing of batch goes while its
/// update runs; the two general nodes made at the start pass their 12 hours and are replaced, each after a
/// new node.
fn third_day_holds_and_replaces(summary: &str, html: &str) {
    let day = &summary[summary
        .find("Day 3: disruption control")
        .expect("a third day")..];
    let span = |label: &str| -> (String, String) {
        let line = (day.lines())
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label:?} in {day}"));
        let times = line.split(" from ").nth(1).unwrap();
        let (from, rest) = times.split_once(" to ").unwrap();
        (from.to_string(), rest[..8].to_string())
    };
    let (held_from, held_to) = span("general: held by its budget");
    assert!(
        held_from.as_str() > "01:15:00" && held_from.as_str() < "02:00:00",
        "{day}"
    );
    assert!(held_to.as_str() >= "02:00:00", "{day}");
    assert_eq!(
        span("batch UPDATING"),
        ("03:55:00".into(), "04:35:00".into()),
        "{day}"
    );
    let replaced: Vec<&str> = (day.lines())
        .filter(|l| l.ends_with("(general) expired: replace"))
        .collect();
    assert_eq!(replaced.len(), 2, "{day}");
    assert!(
        replaced.iter().all(|l| l.trim_start() >= "12:00:00"),
        "{day}"
    );
    // The day's own log, in the report: when nodes went.
    let log = &html[html.find("<h2>Day 3").unwrap()..];
    let removed: Vec<(&str, &str)> = log
        .split("<tr><td>")
        .filter_map(|row| {
            let (at, rest) = row.split_once("</td><td>node removed</td><td>")?;
            let group = rest.split_once(" (")?.1.split_once(')')?.0;
            Some((at, group))
        })
        .collect();
    assert!(
        removed
            .iter()
            .any(|(at, g)| *g == "general" && *at < "03:00:00"),
        "{removed:?}"
    );
    for (at, group) in &removed {
        assert!(
            !(*group == "general" && *at > "01:15:00" && *at < "02:00:00"),
            "office hours: {at}"
        );
        assert!(
            !(*group == "batch" && *at >= "03:55:00" && *at < "04:35:00"),
            "mid-update: {at}"
        );
    }
    assert!(day.contains("nodes: general +"), "{day}");
    // Office hours for batch: 19:00 to 07:00 Berlin is 04:00 to 16:00 on the day's clock.
    assert_eq!(
        span("batch: sized by its schedule"),
        ("04:00:00".into(), "16:00:00".into()),
        "{day}"
    );
    // The Capacity Block: its two nodes run the training job (paid for ahead, before on-demand GPUs), and
    // both are drained from 02:10 UTC (drainLead before EKS scales the group in at 02:20), i.e. 12:10 on the
    // day's clock; the on-demand GPU group takes the job, and the block's group is left at zero.
    let ending: Vec<&str> = (day.lines())
        .filter(|l| l.contains("(gpu-block) capacity block ending: drain"))
        .map(str::trim_start)
        .collect();
    assert_eq!(ending.len(), 2, "{day}");
    assert!(
        ending
            .iter()
            .all(|l| ("12:10:00".."12:20:00").contains(&&l[..8])),
        "{day}"
    );
    assert!(day.contains("gpu-block +2 -2"), "{day}");
    assert!(day.contains("gpu +2 -0"), "{day}");
}

/// Seconds in `1m 30s`.
fn seconds(text: &str) -> u64 {
    humantime::parse_duration(text.trim())
        .unwrap_or_else(|e| panic!("{text:?}: {e}"))
        .as_secs()
}

/// The fourth day, played with leaving nodes handled and ignored. Handled: the pods of the two interrupted
/// Spot nodes run elsewhere before the two-minute warning ends (a new node starts in 90 s), none waiting for
/// its node to go; ignored: each waits for its node to go, then for a new one. The GPU node its group
/// repairs is never scaled down, consolidated or replaced by ekscale, and ekscale adds no GPU node for its
/// pod (the group's replacement is counted as coming).
fn fourth_day_keeps_pods_running(summary: &str, html: &str) {
    let day = &summary[summary
        .find("Day 4: nodes that go away")
        .expect("a fourth day")..];
    let line = |prefix: &str| -> &str {
        (day.lines())
            .find(|l| l.trim_start().starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in {day}"))
    };
    // `N pod(s), p50 X, worst Y; B running elsewhere before the warning ended, W waited for the node to go`
    let figures = |way: &str| -> (usize, u64, u64, usize, usize) {
        let text = line(&format!("{way}: spotInterruption: "));
        let (_, rest) = text.split_once("spotInterruption: ").unwrap();
        let pods = rest.split(' ').next().unwrap().parse().unwrap();
        let p50 = seconds(
            rest.split(", p50 ")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap(),
        );
        let worst = seconds(
            rest.split(", worst ")
                .nth(1)
                .unwrap()
                .split(';')
                .next()
                .unwrap(),
        );
        let before = rest.split("; ").nth(1).unwrap().split(' ').next().unwrap();
        let waited = rest
            .split("ended, ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        (
            pods,
            p50,
            worst,
            before.parse().unwrap(),
            waited.parse().unwrap(),
        )
    };
    let (pods, p50, worst, before, waited) = figures("handled");
    // Two m5.large nodes of two web pods each.
    assert_eq!(pods, 4, "{day}");
    assert!(worst < 120 && p50 <= worst, "{day}");
    assert_eq!((before, waited), (4, 0), "{day}");
    let (pods, ignored_p50, ignored_worst, before, waited) = figures("ignored");
    assert_eq!(pods, 4, "{day}");
    assert_eq!((before, waited), (0, 4), "{day}");
    // The node goes at 2 minutes; a new node takes 90 s more.
    assert!(
        ignored_p50 >= 120 + 90 && ignored_worst >= ignored_p50,
        "{day}"
    );
    // Per pod, both ways.
    let per_pod: Vec<&str> = (day.lines())
        .filter(|l| l.contains("(spotInterruption): "))
        .collect();
    assert_eq!(per_pod.len(), 4, "{day}");
    for row in per_pod {
        let (handled, ignored) = row.split("): ").nth(1).unwrap().split_once(" / ").unwrap();
        assert!(seconds(handled) < 120 && seconds(ignored) >= 210, "{row}");
    }
    // The repaired GPU node: left alone by ekscale both ways; its pod ran again on the group's replacement.
    assert!(
        line("unhealthy node ip-").ends_with("(gpu), repaired by its group:"),
        "{day}"
    );
    assert!(
        line("handled: never scaled down").contains("consolidated or replaced by ekscale"),
        "{day}"
    );
    assert!(
        line("handled: unhealthy: 1 pod(s), p50 ").contains("worst"),
        "{day}"
    );
    assert!(line("nodes, handled:").contains("gpu +0 -0"), "{day}");
    // The report: the per-pod table, both ways.
    let report = &html[html.find("<h2>Day 4").expect("day 4 in the report")..];
    let rows = report.matches("<td>spotInterruption</td>").count();
    assert_eq!(rows, 4, "{report}");
    assert!(report.contains("<th>handled</th><th>ignored</th>"));
}

/// How many node groups the nodes chart draws (one line each).
fn record_groups(html: &str) -> usize {
    let start = html.find("Nodes per node group").unwrap();
    let end = html[start..].find("</svg>").unwrap() + start;
    html[start..end].matches("<polyline").count()
}

/// Headless Chromium (`$CHROMIUM` or `chromium` on PATH; tests/run installs Debian's) with `args`; its
/// standard output. It is stopped if it runs over a minute.
fn chromium(args: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let program = common::tool(
        "CHROMIUM",
        "chromium",
        "run tests/run, which installs Debian's chromium",
    );
    let mut child = Command::new(program)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting chromium");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
        text
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("chromium ran over a minute: {args:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

#[test]
fn a_users_own_script_plays_and_bad_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("mine.yaml");
    std::fs::write(
        &script,
        r#"
scenario:
  cluster: mine
  region: us-east-1
  nodeGroups:
    - {name: small, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 5, desiredSize: 0, labels: {workload: general}}
duration: 20m
timeline:
  - {at: 0s, create: {name: app, count: 4, cpu: "1", memory: 1Gi}}
  - {at: 5m, delete: app}
"#,
    )
    .unwrap();
    let output = demo(&["--speed", "0", "--scenario", script.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("small      +4 -4"), "{stdout}");
    assert!(stdout.contains("every pod found a place"), "{stdout}");
    assert!(
        stdout.contains("at the end: 0 node(s), 0 pending"),
        "{stdout}"
    );
    // The same day with a budget of no disruption: the nodes stay.
    let budget = dir.path().join("budget.yaml");
    std::fs::write(
        &budget,
        "nodeGroups:\n  - match: small\n    budgets: [{nodes: \"0\"}]\n",
    )
    .unwrap();
    let (script_path, budget_path) = (script.to_str().unwrap(), budget.to_str().unwrap());
    let args = [
        "--speed",
        "0",
        "--scenario",
        script_path,
        "--disruption-config",
        budget_path,
    ];
    let stdout = String::from_utf8(demo(&args).stdout).unwrap();
    assert!(stdout.contains("small      +4 -0"), "{stdout}");
    std::fs::write(
        &budget,
        "nodeGroups:\n  - match: small\n    expireAfter: 3d\n",
    )
    .unwrap();
    let output = demo(&args);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--disruption-config") && stderr.contains("expireAfter"),
        "{stderr}"
    );

    std::fs::write(
        &script,
        "scenario: builtin\nduration: 10m\ntimeline: [{at: 1m, create: {name: x, count: 0, cpu: '1', memory: 1Gi}}]\n",
    )
    .unwrap();
    let output = demo(&["--scenario", script.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("mine.yaml: timeline entry 0 (at 1m): x: count must be at least 1"),
        "{stderr}"
    );
    let output = demo(&["--speed=-1"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--speed -1"));
}
