//! A loopback proxy in front of moto that does to the AWS SDK what AWS does on a bad day: throttles,
//! answers 503, loses the answer to a request it carried out, or takes its time.

use axum::body::{Body, Bytes};
use axum::http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;

/// An error AWS answers with.
#[derive(Clone, Copy, Debug)]
pub enum AwsError {
    /// 400 `Throttling` (query protocols) / 429 `ThrottlingException` (EKS).
    Throttling,
    /// 503 `ServiceUnavailable`.
    Unavailable,
}

/// What happens to a matching request.
#[derive(Clone, Copy, Debug)]
pub enum Fault {
    /// AWS never sees it; the client gets the error.
    Refuse(AwsError),
    /// AWS carries it out; the client gets the error instead of the answer.
    LoseAnswer(AwsError),
    /// It waits this long, then goes through.
    Delay(Duration),
}

struct Rule {
    operation: String,
    /// Only requests whose body contains this (e.g. one Auto Scaling group's name).
    body: Option<String>,
    fault: Fault,
    left: usize,
}

#[derive(Default)]
struct Book {
    rules: Vec<Rule>,
    /// Every request's operation, in order, with whether a fault was applied to it.
    seen: Vec<(String, bool)>,
}

pub struct FaultProxy {
    pub endpoint: String,
    book: Arc<Mutex<Book>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl FaultProxy {
    /// A proxy on a loopback port it picks, forwarding to `upstream` (moto's endpoint).
    pub async fn start(upstream: &str) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let book = Arc::new(Mutex::new(Book::default()));
        let client: Client<HttpConnector, Full<Bytes>> =
            Client::builder(TokioExecutor::new()).build_http();
        let upstream = upstream.trim_end_matches('/').to_string();
        let shared = book.clone();
        let app = axum::Router::new().fallback(move |request: Request<Body>| {
            let (book, client, upstream) = (shared.clone(), client.clone(), upstream.clone());
            async move { handle(request, &book, &client, &upstream).await }
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        FaultProxy {
            endpoint,
            book,
            stop: Some(stop),
        }
    }

    /// Applies `fault` to the next `times` requests whose operation is `operation` (a query protocol's
    /// `Action`, or "METHOD /path" for EKS, matched as a prefix).
    pub fn inject(&self, operation: &str, fault: Fault, times: usize) {
        self.add(operation, None, fault, times);
    }

    /// The same, for requests whose body also contains `body` (a form-encoded value for query protocols).
    pub fn inject_when(&self, operation: &str, body: &str, fault: Fault, times: usize) {
        self.add(operation, Some(body.to_string()), fault, times);
    }

    fn add(&self, operation: &str, body: Option<String>, fault: Fault, times: usize) {
        self.book.lock().unwrap().rules.push(Rule {
            operation: operation.to_string(),
            body,
            fault,
            left: times,
        });
    }

    /// Stops every fault.
    pub fn heal(&self) {
        self.book.lock().unwrap().rules.clear();
    }

    /// How many requests for `operation` reached the proxy, and how many of them got a fault.
    pub fn calls(&self, operation: &str) -> (usize, usize) {
        let book = self.book.lock().unwrap();
        let mine = book.seen.iter().filter(|(op, _)| op.starts_with(operation));
        let (mut all, mut faulted) = (0, 0);
        for (_, fault) in mine {
            all += 1;
            faulted += usize::from(*fault);
        }
        (all, faulted)
    }
}

/// The request's operation: the form's `Action` for query protocols (Auto Scaling, EC2), else method and
/// path (EKS's REST-JSON).
fn operation(method: &str, path: &str, body: &[u8]) -> (String, bool) {
    let form = String::from_utf8_lossy(body);
    match form
        .split('&')
        .find_map(|pair| pair.strip_prefix("Action="))
    {
        Some(action) => (action.to_string(), true),
        None => (format!("{method} {path}"), false),
    }
}

fn error_response(error: AwsError, query: bool) -> Response<Body> {
    let (status, code, message) = match error {
        AwsError::Throttling if query => (StatusCode::BAD_REQUEST, "Throttling", "Rate exceeded"),
        AwsError::Throttling => (
            StatusCode::TOO_MANY_REQUESTS,
            "ThrottlingException",
            "Rate exceeded",
        ),
        AwsError::Unavailable => (
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            "Service is unavailable",
        ),
    };
    let builder = Response::builder().status(status);
    if query {
        let body = format!(
            "<ErrorResponse><Error><Type>Receiver</Type><Code>{code}</Code><Message>{message}</Message>\
             </Error><RequestId>fault-proxy</RequestId></ErrorResponse>"
        );
        builder
            .header("content-type", "text/xml")
            .body(Body::from(body))
            .unwrap()
    } else {
        builder
            .header("content-type", "application/json")
            .header("x-amzn-errortype", code)
            .body(Body::from(format!(r#"{{"message":"{message}"}}"#)))
            .unwrap()
    }
}

async fn handle(
    request: Request<Body>,
    book: &Mutex<Book>,
    client: &Client<HttpConnector, Full<Bytes>>,
    upstream: &str,
) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 64 << 20).await.unwrap();
    let (op, query) = operation(parts.method.as_str(), parts.uri.path(), &body);
    let text = String::from_utf8_lossy(&body);
    let fault = {
        let mut book = book.lock().unwrap();
        let fault = book
            .rules
            .iter_mut()
            .find(|r| {
                r.left > 0
                    && op.starts_with(&r.operation)
                    && r.body.as_ref().is_none_or(|b| text.contains(b.as_str()))
            })
            .map(|r| {
                r.left -= 1;
                r.fault
            });
        book.seen.push((op, fault.is_some()));
        fault
    };
    match fault {
        Some(Fault::Refuse(error)) => return error_response(error, query),
        Some(Fault::Delay(delay)) => tokio::time::sleep(delay).await,
        _ => {}
    }
    let uri = format!(
        "{upstream}{}",
        parts.uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let mut forward = Request::builder().method(parts.method).uri(uri);
    for (name, value) in &parts.headers {
        if name != "host" {
            forward = forward.header(name, value);
        }
    }
    let answer = client
        .request(forward.body(Full::new(body)).unwrap())
        .await
        .unwrap();
    if let Some(Fault::LoseAnswer(error)) = fault {
        return error_response(error, query);
    }
    answer.map(Body::new)
}
