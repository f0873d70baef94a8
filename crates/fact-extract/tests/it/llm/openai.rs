//! `OpenAiCompatibleLlm` against a real HTTP server on 127.0.0.1 written here: a reply, a
//! 429, a 500, malformed bodies, a server that never answers, and a missing key.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::Duration;

use fact_extract::{LlmClient, LlmError, OpenAiCompatibleLlm, OpenAiConfig, parse_reply};
use serde_json::{Value, json};

/// A request as the server saw it.
#[derive(Debug)]
struct Request {
    method: String,
    path: String,
    /// Header names lowercased, in order.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the server does with the one request it accepts.
enum Answer {
    /// Responds with this status and body.
    Respond(u16, String),
    /// Reads the request, then holds the connection open without a word until the
    /// receiver's sender is dropped.
    Hang(Receiver<()>),
}

/// Starts a server for one connection; returns its base URL and the request it reads.
fn serve(answer: Answer) -> (String, Receiver<Request>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (sender, requests) = mpsc::channel();
    thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        handle(stream, answer, &sender);
    });
    (base_url, requests)
}

fn handle(stream: TcpStream, answer: Answer, sender: &Sender<Request>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap().to_owned();
    let path = parts.next().unwrap().to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap();
        headers.push((name.trim().to_lowercase(), value.trim().to_owned()));
    }
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if let Some(length) = find("content-length") {
        body.resize(length.parse().unwrap(), 0);
        reader.read_exact(&mut body).unwrap();
    } else if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).unwrap();
            let size = usize::from_str_radix(size.trim(), 16).unwrap();
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).unwrap();
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
    sender
        .send(Request {
            method,
            path,
            headers,
            body,
        })
        .unwrap();
    let mut stream = stream;
    match answer {
        Answer::Respond(status, body) => {
            let response = format!(
                "HTTP/1.1 {status} Status\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(response.as_bytes()).unwrap();
            stream.flush().unwrap();
        }
        Answer::Hang(until) => {
            let _ = until.recv();
        }
    }
}

fn client(base_url: &str) -> OpenAiCompatibleLlm {
    let config = OpenAiConfig::default()
        .with_base_url(base_url.to_owned())
        .with_model("test-model".to_owned())
        .with_timeout(Duration::from_secs(10))
        .with_temperature(Some(0.2));
    OpenAiCompatibleLlm::with_api_key(config, "sk-test")
}

fn completion(content: &str) -> String {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    })
    .to_string()
}

#[test]
fn a_reply_is_the_first_choice_s_content() {
    let (base_url, requests) = serve(Answer::Respond(200, completion(r#"{"facts": []}"#)));
    let reply = client(&format!("{base_url}/"))
        .complete("Extract the facts.")
        .unwrap();
    assert_eq!(reply, r#"{"facts": []}"#);
    let request = requests.recv().unwrap();
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert!(
        request
            .header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(
        body,
        json!({
            "model": "test-model",
            "messages": [{"role": "user", "content": "Extract the facts."}],
            "temperature": 0.2,
        })
    );
}

#[test]
fn the_whole_reply_contract_passes_through_unchanged() {
    let content = r#"{"facts": [{"subject": "user", "predicate": "lives_in", "object": "Berlin", "content": "User moved to Berlin", "category": "context", "confidence": 0.9, "turn": 2, "supersedes": ["a1b2c3d4"]}], "facts_to_remove": ["e5f6a7b8"], "aliases": [{"alias": "Mel", "entity": "Melanie"}], "user_context": {"work": "Engineer", "personal": "Berlin", "top_of_mind": "The move"}, "history": {"recent_months": "Moved", "earlier_context": "Paris", "long_term_background": "France"}}"#;
    let (base_url, _requests) = serve(Answer::Respond(200, completion(content)));
    let reply = client(&base_url).complete("Extract the facts.").unwrap();
    assert_eq!(reply, content);
    let parsed = parse_reply(&reply).unwrap();
    assert_eq!(parsed.facts[0].turn, Some(2));
    assert_eq!(parsed.facts[0].supersedes, ["a1b2c3d4"]);
    assert_eq!(parsed.facts_to_remove, ["e5f6a7b8"]);
    assert_eq!(parsed.aliases.len(), 1);
    assert_eq!((parsed.user_context.len(), parsed.history.len()), (3, 3));
    assert!(parsed.notes.is_empty() && parsed.rejected.is_empty());
}

#[test]
fn the_temperature_can_be_left_out() {
    let (base_url, requests) = serve(Answer::Respond(200, completion("ok")));
    let config = OpenAiConfig::default()
        .with_base_url(base_url)
        .with_temperature(None);
    let client = OpenAiCompatibleLlm::with_api_key(config, "k");
    assert_eq!(client.complete("p").unwrap(), "ok");
    let body: Value = serde_json::from_slice(&requests.recv().unwrap().body).unwrap();
    assert_eq!(body.get("temperature"), None);
    assert_eq!(body["model"], "gpt-4o-mini");
}

#[test]
fn error_statuses_carry_the_status_and_the_body_s_tail() {
    let limited = r#"{"error": {"message": "Rate limit reached", "type": "requests"}}"#;
    let (base_url, _requests) = serve(Answer::Respond(429, limited.to_owned()));
    let err = client(&base_url).complete("p").unwrap_err();
    assert!(
        matches!(&err, LlmError::Http { status: 429, body_tail } if body_tail == limited),
        "{err:?}"
    );
    let long = format!("{}END", "x".repeat(2_000));
    let (base_url, _requests) = serve(Answer::Respond(500, long));
    let err = client(&base_url).complete("p").unwrap_err();
    let LlmError::Http { status, body_tail } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(*status, 500);
    assert_eq!(body_tail.chars().count(), 500);
    assert!(body_tail.starts_with("...x") && body_tail.ends_with("xEND"));
}

#[test]
fn malformed_bodies_are_invalid_replies() {
    for (body, expect) in [
        ("not json", "invalid reply: the response is not JSON: "),
        (
            r#"{"choices": []}"#,
            "invalid reply: the response has no choices[0].message.content: ",
        ),
        (
            r#"{"choices": [{"message": {"content": null}}]}"#,
            "invalid reply: the response has no choices[0].message.content: ",
        ),
    ] {
        let (base_url, _requests) = serve(Answer::Respond(200, body.to_owned()));
        let err = client(&base_url).complete("p").unwrap_err();
        assert!(matches!(err, LlmError::InvalidReply(_)), "{err:?}");
        assert!(err.to_string().starts_with(expect), "{err}");
    }
}

#[test]
fn a_server_that_never_answers_times_out() {
    let (hold, until) = mpsc::channel();
    let (base_url, requests) = serve(Answer::Hang(until));
    let config = OpenAiConfig::default()
        .with_base_url(base_url)
        .with_timeout(Duration::from_millis(300));
    let err = OpenAiCompatibleLlm::with_api_key(config, "k")
        .complete("p")
        .unwrap_err();
    assert!(
        matches!(err, LlmError::Timeout { after } if after == Duration::from_millis(300)),
        "{err:?}"
    );
    // The request did arrive: the timeout is the reply's, not the connection's.
    assert_eq!(requests.recv().unwrap().path, "/v1/chat/completions");
    drop(hold);
}

#[test]
fn a_closed_port_is_a_transport_error() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let err = client(&format!("http://127.0.0.1:{port}/v1"))
        .complete("p")
        .unwrap_err();
    assert!(matches!(err, LlmError::Transport(_)), "{err:?}");
}

#[test]
fn the_key_comes_from_the_named_environment_variable() {
    let config =
        OpenAiConfig::default().with_api_key_env("FACTMEM_TEST_UNSET_API_KEY_VARIABLE".to_owned());
    let err = OpenAiCompatibleLlm::from_env(config).unwrap_err();
    assert_eq!(
        err.to_string(),
        "environment variable `FACTMEM_TEST_UNSET_API_KEY_VARIABLE` holds no API key"
    );
    // Cargo sets CARGO_PKG_NAME for the tests it runs: a variable that is surely set,
    // without changing the process's environment.
    let (base_url, requests) = serve(Answer::Respond(200, completion("ok")));
    let config = OpenAiConfig::default()
        .with_base_url(base_url)
        .with_api_key_env("CARGO_PKG_NAME".to_owned());
    let client = OpenAiCompatibleLlm::from_env(config).unwrap();
    assert_eq!(client.complete("p").unwrap(), "ok");
    let expect = format!("Bearer {}", env!("CARGO_PKG_NAME"));
    assert_eq!(
        requests.recv().unwrap().header("authorization"),
        Some(expect.as_str())
    );
}
