//! Issue 41 item 9: the demo hands out each part as it ends, the headline (the seed
//! failure) first, and a part before the next one starts. Functional, no timing: a stub
//! server (the naive baseline, wrapped to log each start) and a sink that logs each part
//! give one event log whose order is checked.

// Test helpers outside #[test] functions: a failed set-up is the test's failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use portcullis_demo::{
    BaselineServer, BoxFuture, DemoOptions, DemoServer, Finished, HEADLINE, Setup, Started,
};
use portcullis_lab::LabError;

#[derive(Debug, Clone, PartialEq)]
enum Event {
    /// A server started (for some scenario).
    Start,
    /// The sink got a part: its name, whether it is the headline, its tables' titles.
    Part(String, bool, Vec<String>),
}

/// The baseline, logging each start into the shared event log.
struct Logged {
    inner: BaselineServer,
    log: Arc<Mutex<Vec<Event>>>,
}

impl DemoServer for Logged {
    fn label(&self) -> String {
        self.inner.label()
    }
    fn about(&self) -> String {
        self.inner.about()
    }
    fn start(&self, setup: Setup) -> BoxFuture<Result<Started, LabError>> {
        self.log.lock().unwrap().push(Event::Start);
        self.inner.start(setup)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_41_sink_gets_the_headline_first_and_each_part_before_the_next_starts() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let srv = Logged {
        inner: BaselineServer { workers: 4 },
        log: log.clone(),
    };
    let opts = DemoOptions {
        quick: true,
        progress: false,
        verify_target: Duration::from_millis(1),
        // Named in the other order: the demo still opens with the headline.
        only: vec!["radius-demo-legit".into(), HEADLINE.into()],
    };
    let sink_log = log.clone();
    let mut sink = move |part: &Finished| {
        sink_log.lock().unwrap().push(Event::Part(
            part.name.clone(),
            part.headline,
            part.tables.iter().map(|t| t.title.clone()).collect(),
        ));
    };
    let servers: Vec<&dyn DemoServer> = vec![&srv];
    let report = portcullis_demo::run(&servers, &opts, &mut sink)
        .await
        .expect("the demo runs against the baseline");
    let events = log.lock().unwrap().clone();
    assert_eq!(
        events,
        vec![
            Event::Start,
            Event::Part(
                HEADLINE.into(),
                true,
                vec![format!(
                    "Seed failure ({HEADLINE}): naive baseline vs Portcullis"
                )]
            ),
            Event::Start,
            Event::Part(
                "radius-demo-legit".into(),
                false,
                vec!["radius-demo-legit".into()]
            ),
        ]
    );
    // The report keeps that order: the headline's table and section first.
    assert_eq!(report.sections[0].scenario, HEADLINE);
    assert!(report.tables[0].title.starts_with("Seed failure"));
    assert_eq!(report.tables[0].rows[0][0], "baseline");
}
