//! The task that reads the interruption queue: long-polls it (ReceiveMessage, 20 s, up to 10 messages),
//! reads each message, records what it says and deletes it. A message that cannot be read, or names no
//! instance of a served node group, is logged with why, deleted and counted ignored: left on the queue it
//! would come back after every visibility timeout until the queue's retention dropped it, and nothing can
//! ever be done with it. A message is counted (`received`, then `parsed` or `ignored`) only once its delete
//! has succeeded: one whose delete fails comes back, is read again (which records nothing new) and is
//! counted then, once. A message read while the backend is going away is not recorded, so it is left on
//! the queue to come back. A queue that fails is counted and retried after a backoff that doubles to a
//! minute; it never stops the provider.

use super::messages::{Notice, parse};
use super::record::{Membership, Record, Taken};
use crate::cloud::aws::calls::outcome;
use crate::cloud::backend::CloudObserver;
use aws_sdk_sqs::error::{DisplayErrorContext, SdkError};
use aws_sdk_sqs::types::Message;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// ReceiveMessage waits this long for a message (SQS's longest long poll).
const WAIT_SECONDS: i32 = 20;
/// ReceiveMessage takes at most this many messages (SQS's most).
const BATCH: i32 = 10;
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const LONGEST_BACKOFF: Duration = Duration::from_secs(60);

/// Reads one queue into one record, for as long as the backend it serves lives.
pub struct Poller {
    pub client: aws_sdk_sqs::Client,
    /// The queue's URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`), or its name, which
    /// GetQueueUrl turns into its URL (as Karpenter's `--interruption-queue` takes it).
    pub queue: String,
    pub record: Arc<Record>,
    /// The backend's view: held weakly, so that the task ends with the backend.
    pub members: Weak<dyn Membership>,
    pub metrics: Arc<dyn CloudObserver>,
}

/// A call to the queue that failed.
#[derive(Debug, thiserror::Error)]
#[error("sqs:{operation}: {message}")]
struct QueueError {
    operation: &'static str,
    message: String,
}

/// What became of one message read.
enum Handled {
    /// Recorded, or of no use: deleted, then counted.
    Done(Fate),
    /// Read while the backend is going away: nothing recorded it, so it stays on the queue.
    Kept,
}

/// A message's fate, as counted in `interruption_messages_total{kind,outcome}`.
struct Fate {
    kind: &'static str,
    outcome: &'static str,
}

impl Poller {
    /// Runs in a task of its own.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.run())
    }

    async fn run(self) {
        let mut backoff = FIRST_BACKOFF;
        let mut url = None;
        while self.members.strong_count() > 0 {
            let step = match &url {
                None => self.resolve().await.map(|found| url = Some(found)),
                Some(url) => self.poll(url).await,
            };
            match step {
                Ok(()) => backoff = FIRST_BACKOFF,
                Err(error) => {
                    self.metrics.observe_interruption_queue_error();
                    let queue = &self.queue;
                    let retry_in = backoff;
                    tracing::warn!(queue, %error, ?retry_in, "interruption queue failed");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(LONGEST_BACKOFF);
                }
            }
        }
    }

    /// The queue's URL: given, or asked of SQS by its name.
    async fn resolve(&self) -> Result<String, QueueError> {
        let url = if self.queue.starts_with("https://") || self.queue.starts_with("http://") {
            self.queue.clone()
        } else {
            let request = self.client.get_queue_url().queue_name(&self.queue);
            let output = self.call("GetQueueUrl", request.send().await)?;
            output.queue_url().unwrap_or_default().to_string()
        };
        tracing::info!(queue = self.queue, url, "reading the interruption queue");
        Ok(url)
    }

    /// One long poll, and every message it brought recorded and deleted.
    async fn poll(&self, url: &str) -> Result<(), QueueError> {
        let request = (self.client.receive_message())
            .queue_url(url)
            .wait_time_seconds(WAIT_SECONDS)
            .max_number_of_messages(BATCH);
        let output = self.call("ReceiveMessage", request.send().await)?;
        for message in output.messages() {
            let Handled::Done(fate) = self.handle(message) else {
                continue;
            };
            // Counted once deleted: a count says the message has left the queue, and one whose delete
            // fails comes back (the rest of the batch with it) to be read and counted then.
            self.delete(url, message).await?;
            self.metrics
                .observe_interruption_message(fate.kind, "received");
            self.metrics
                .observe_interruption_message(fate.kind, fate.outcome);
        }
        Ok(())
    }

    /// Reads one message and records what it says.
    fn handle(&self, message: &Message) -> Handled {
        let id = message.message_id().unwrap_or_default();
        let notice = match parse(message.body().unwrap_or_default()) {
            Ok(notice) => notice,
            Err(why) => {
                tracing::warn!(message = id, %why, "interruption message ignored");
                return Handled::Done(Fate {
                    kind: why.kind(),
                    outcome: "ignored",
                });
            }
        };
        let kind = notice.kind.as_str();
        let Some(members) = self.members.upgrade() else {
            tracing::debug!(
                message = id,
                kind,
                "interruption message left on the queue: the backend is gone"
            );
            return Handled::Kept;
        };
        match self.record.take(&notice, members.as_ref()) {
            Taken::UnknownInstance(instances) => {
                // Debug: the rules see every instance of the account, most of them in no served group.
                tracing::debug!(
                    message = id,
                    kind,
                    ?instances,
                    "interruption message ignored: unknownInstance (in no node group served)"
                );
                Handled::Done(Fate {
                    kind,
                    outcome: "ignored",
                })
            }
            taken => {
                log_taken(id, &notice, &taken);
                Handled::Done(Fate {
                    kind,
                    outcome: "parsed",
                })
            }
        }
    }

    async fn delete(&self, url: &str, message: &Message) -> Result<(), QueueError> {
        let Some(handle) = message.receipt_handle() else {
            return Ok(());
        };
        let request = self
            .client
            .delete_message()
            .queue_url(url)
            .receipt_handle(handle);
        // A message not deleted comes back after its visibility timeout and is recorded again, which
        // changes nothing: the error is counted and the poll goes on after the backoff.
        self.call("DeleteMessage", request.send().await).map(drop)
    }

    /// Counts one SQS call as every AWS call is counted, its error said with AWS's code and message.
    fn call<T, E, R>(
        &self,
        operation: &'static str,
        result: Result<T, SdkError<E, R>>,
    ) -> Result<T, QueueError>
    where
        E: aws_sdk_sqs::error::ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug,
    {
        let outcome = outcome(&result);
        self.metrics.observe_aws_call("sqs", operation, outcome);
        result.map_err(|e| QueueError {
            operation,
            message: DisplayErrorContext(&e).to_string(),
        })
    }
}

fn log_taken(id: &str, notice: &Notice, taken: &Taken) {
    let at = jiff::Timestamp::try_from(notice.at).map_or_else(|_| "?".into(), |t| t.to_string());
    let kind = notice.kind.as_str();
    let instances = &notice.instances;
    let detail = &notice.detail;
    match *taken {
        Taken::Recorded {
            taken: 0,
            kept_stronger,
        } => tracing::debug!(
            message = id,
            kind,
            ?instances,
            kept_stronger,
            "interruption message changed nothing: each instance keeps the stronger reason it has"
        ),
        Taken::Recorded {
            taken,
            kept_stronger,
        } => tracing::info!(
            message = id,
            kind,
            ?instances,
            at,
            detail,
            taken,
            kept_stronger,
            "interruption message recorded"
        ),
        Taken::NothingSaid | Taken::UnknownInstance(_) => tracing::debug!(
            message = id,
            kind,
            ?instances,
            detail,
            "interruption message says nothing of an instance leaving"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
    use aws_sdk_sqs::operation::delete_message::{DeleteMessageError, DeleteMessageOutput};
    use aws_sdk_sqs::operation::receive_message::ReceiveMessageOutput;
    use aws_smithy_mocks::{
        MockResponseInterceptor, Rule, RuleMode, create_mock_http_client, mock,
    };
    use std::sync::Mutex;

    const URL: &str = "https://sqs.us-east-1.amazonaws.com/123456789012/prod-interruptions";
    const INSTANCE: &str = "i-0123456789abcdef0";

    /// The instance in group `spot`.
    struct Groups;

    impl Membership for Groups {
        fn locate(&self, instance_id: &str) -> Option<(String, String)> {
            (instance_id == INSTANCE)
                .then(|| (format!("aws:///us-east-1a/{instance_id}"), "spot".into()))
        }
    }

    /// The interruption messages counted, in order.
    #[derive(Default)]
    struct Counted(Mutex<Vec<(&'static str, &'static str)>>);

    impl Counted {
        fn all(&self) -> Vec<(&'static str, &'static str)> {
            self.0.lock().unwrap().clone()
        }
    }

    impl CloudObserver for Counted {
        fn observe_aws_call(&self, _: &'static str, _: &'static str, _: &'static str) {}
        fn observe_refresh(&self, _: Duration) {}
        fn set_skipped(&self, _: &[(String, i64)]) {}
        fn observe_atomic_increase(&self, _: &'static str) {}
        fn observe_interruption_message(&self, kind: &'static str, outcome: &'static str) {
            self.0.lock().unwrap().push((kind, outcome));
        }
        fn observe_interruption_queue_error(&self) {}
    }

    /// An SQS client answering from `rules`, without retries.
    fn sqs(rules: &[&Rule]) -> aws_sdk_sqs::Client {
        let mut interceptor = MockResponseInterceptor::new().rule_mode(RuleMode::MatchAny);
        for rule in rules {
            interceptor = interceptor.with_rule(rule);
        }
        let config = aws_sdk_sqs::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "mock"))
            .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
            .http_client(create_mock_http_client())
            .interceptor(interceptor)
            .build();
        aws_sdk_sqs::Client::from_conf(config)
    }

    /// ReceiveMessage answering one Spot interruption warning for the instance.
    fn one_warning() -> Rule {
        let body = serde_json::json!({
            "version": "0",
            "detail-type": "EC2 Spot Instance Interruption Warning",
            "source": "aws.ec2",
            "time": "2024-01-01T00:00:00Z",
            "detail": {"instance-id": INSTANCE, "instance-action": "terminate"},
        })
        .to_string();
        mock!(aws_sdk_sqs::Client::receive_message).then_output(move || {
            let message = Message::builder()
                .message_id("m-1")
                .receipt_handle("r-1")
                .body(&body)
                .build();
            ReceiveMessageOutput::builder().messages(message).build()
        })
    }

    fn deleted() -> Rule {
        mock!(aws_sdk_sqs::Client::delete_message)
            .then_output(|| DeleteMessageOutput::builder().build())
    }

    /// A poller of the queue through `client`, counting into `counted`.
    fn reader(
        client: aws_sdk_sqs::Client,
        members: Weak<dyn Membership>,
        counted: &Arc<Counted>,
    ) -> Poller {
        Poller {
            client,
            queue: URL.into(),
            record: Arc::default(),
            members,
            metrics: counted.clone(),
        }
    }

    const WARNED: [(&str, &str); 2] = [
        ("spotInterruption", "received"),
        ("spotInterruption", "parsed"),
    ];

    #[tokio::test]
    async fn a_message_read_while_the_backend_goes_is_left_on_the_queue_uncounted() {
        let (receive, delete) = (one_warning(), deleted());
        let counted = Arc::new(Counted::default());
        let gone: Weak<dyn Membership> = Arc::downgrade(&(Arc::new(Groups) as Arc<dyn Membership>));
        let poller = reader(sqs(&[&receive, &delete]), gone, &counted);
        poller.poll(URL).await.unwrap();
        assert_eq!(receive.num_calls(), 1);
        assert_eq!(
            delete.num_calls(),
            0,
            "nothing recorded it: it must come back"
        );
        assert!(counted.all().is_empty(), "{:?}", counted.all());

        // The same message with the backend there: recorded, deleted, counted.
        let members: Arc<dyn Membership> = Arc::new(Groups);
        let poller = reader(
            sqs(&[&receive, &delete]),
            Arc::downgrade(&members),
            &counted,
        );
        poller.poll(URL).await.unwrap();
        assert_eq!(delete.num_calls(), 1);
        assert_eq!(counted.all(), WARNED);
        let now = std::time::SystemTime::UNIX_EPOCH;
        assert_eq!(poller.record.list(now).len(), 1);
    }

    #[tokio::test]
    async fn a_message_whose_delete_fails_is_counted_once_when_it_comes_back() {
        let members: Arc<dyn Membership> = Arc::new(Groups);
        let counted = Arc::new(Counted::default());
        let receive = one_warning();
        let refused = mock!(aws_sdk_sqs::Client::delete_message).then_error(|| {
            let error = aws_sdk_sqs::error::ErrorMetadata::builder()
                .code("AccessDenied")
                .message("not allowed to sqs:DeleteMessage")
                .build();
            DeleteMessageError::generic(error)
        });
        let failing = reader(
            sqs(&[&receive, &refused]),
            Arc::downgrade(&members),
            &counted,
        );
        let error = failing.poll(URL).await.unwrap_err();
        assert!(error.to_string().contains("DeleteMessage"), "{error}");
        assert_eq!(refused.num_calls(), 1);
        assert!(counted.all().is_empty(), "{:?}", counted.all());

        // It comes back after its visibility timeout, and this time leaves the queue: counted once.
        let delete = deleted();
        let poller = reader(
            sqs(&[&receive, &delete]),
            Arc::downgrade(&members),
            &counted,
        );
        poller.poll(URL).await.unwrap();
        assert_eq!(delete.num_calls(), 1);
        assert_eq!(counted.all(), WARNED);
    }
}
