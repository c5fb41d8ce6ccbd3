use super::*;
use portcullis_ldap::frame::decode_request;
use portcullis_ldap::proto::LdapMsg;
use portcullis_ldap::proto::proto::{LdapBindCred, LdapBindRequest};
use portcullis_ldap::response::{bind_response, encode};
use portcullis_ldap::{ResultCode, response};
use std::time::Instant;

/// A directory stand-in: binds with password "right" succeed, others get
/// invalidCredentials; with `trickle` every answer is written one byte per write.
async fn directory(trickle: bool) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            conn.set_nodelay(true).unwrap();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let Ok(n) = conn.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    while let Ok(Frame::Message { message, consumed }) =
                        decode_request(&buf, &Limits::default())
                    {
                        buf.drain(..consumed);
                        let answer = answer(&message);
                        if trickle {
                            for b in answer {
                                conn.write_all(&[b]).await.unwrap();
                                conn.flush().await.unwrap();
                                tokio::task::yield_now().await;
                            }
                        } else {
                            conn.write_all(&answer).await.unwrap();
                        }
                    }
                }
            });
        }
    });
    addr
}

fn answer(request: &LdapMsg) -> Vec<u8> {
    let ok = matches!(&request.op,
        LdapOp::BindRequest(b) if b.cred == LdapBindCred::Simple("right".into()));
    let code = if ok {
        ResultCode::Success
    } else {
        ResultCode::InvalidCredentials
    };
    encode(bind_response(request.msgid, code, ""))
}

fn bind(msgid: i32, password: &str) -> Vec<u8> {
    encode(LdapMsg::new(
        msgid,
        LdapOp::BindRequest(LdapBindRequest {
            version: 3,
            dn: "uid=user1,ou=people,dc=example,dc=org".into(),
            cred: LdapBindCred::Simple(password.into()),
        }),
    ))
}

/// Sends a bind through `conn` and reads its whole answer: (result code, time taken).
async fn bind_through(conn: &mut TcpStream, msgid: i32, password: &str) -> (i32, Duration) {
    let started = Instant::now();
    conn.write_all(&bind(msgid, password)).await.unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = conn.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the relay closed the connection");
        buf.extend_from_slice(&chunk[..n]);
        if let Frame::Message { message, consumed } =
            decode_response(&buf, &Limits::default()).unwrap()
        {
            assert_eq!(consumed, buf.len(), "one answer, nothing after it");
            assert_eq!(message.msgid, msgid);
            let LdapOp::BindResponse(r) = message.op else {
                panic!("not a BindResponse: {:?}", message.op)
            };
            return (r.res.code as i32, started.elapsed());
        }
    }
}

async fn relay(directory: SocketAddr, delay: Duration) -> Relay {
    let config = RelayConfig {
        upstream: directory,
        failed_bind_delay: delay,
    };
    Relay::start("127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap()
}

/// Waits (bounded) until the relay's counters satisfy `cond`.
async fn until(relay: &Relay, cond: impl Fn(&RelayCounts) -> bool) -> RelayCounts {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let c = relay.counts();
        if cond(&c) {
            return c;
        }
        assert!(Instant::now() < deadline, "counters never got there: {c:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn a_failed_bind_is_answered_after_the_delay_a_right_one_at_once() {
    let delay = Duration::from_millis(300);
    let r = relay(directory(false).await, delay).await;
    let mut conn = TcpStream::connect(r.addr()).await.unwrap();
    let (code, took) = bind_through(&mut conn, 1, "wrong").await;
    assert_eq!(code, 49);
    assert!(took >= delay, "a failed bind came back after {took:?}");
    // The same connection carries on: the next bind (a right one) is not held.
    let (code, _) = bind_through(&mut conn, 2, "right").await;
    assert_eq!(code, 0);
    let c = r.counts();
    assert_eq!((c.binds_failed, c.binds_succeeded, c.held_now), (1, 1, 0));
    assert_eq!((c.connections, c.held_max, c.undecoded), (1, 1, 0));
}

/// A held failure delays only its own connection: while two failed binds are held (a
/// delay far longer than the test), a right bind on a third connection is answered.
#[tokio::test]
async fn a_held_failure_blocks_no_other_connection() {
    let r = relay(directory(false).await, Duration::from_secs(3600)).await;
    let mut guessers = Vec::new();
    for i in 0..2 {
        let mut conn = TcpStream::connect(r.addr()).await.unwrap();
        conn.write_all(&bind(i + 1, "wrong")).await.unwrap();
        guessers.push(conn);
    }
    until(&r, |c| c.held_now == 2).await;
    let mut honest = TcpStream::connect(r.addr()).await.unwrap();
    let answered = tokio::time::timeout(
        Duration::from_secs(20),
        bind_through(&mut honest, 7, "right"),
    );
    let (code, _) = answered
        .await
        .expect("the honest bind waited on the held ones");
    assert_eq!(code, 0);
    let c = r.counts();
    assert_eq!((c.held_now, c.binds_succeeded, c.binds_failed), (2, 1, 2));
    // Nothing of the held answers reached their clients.
    for g in &mut guessers {
        let mut byte = [0u8; 1];
        assert!(g.try_read(&mut byte).is_err(), "a held answer leaked");
    }
    // A guesser leaving frees its hold.
    drop(guessers);
    until(&r, |c| c.held_now == 0).await;
}

/// Answers trickling in one byte per write are forwarded whole, and held when failed.
#[tokio::test]
async fn answers_split_over_many_reads_are_framed_and_classified() {
    let delay = Duration::from_millis(200);
    let r = relay(directory(true).await, delay).await;
    let mut conn = TcpStream::connect(r.addr()).await.unwrap();
    let (code, _) = bind_through(&mut conn, 1, "right").await;
    assert_eq!(code, 0);
    let (code, took) = bind_through(&mut conn, 2, "wrong").await;
    assert_eq!(code, 49);
    assert!(took >= delay, "{took:?}");
    let c = r.counts();
    assert_eq!((c.binds_failed, c.binds_succeeded, c.undecoded), (1, 1, 0));
}

/// The probe the lab reads a directory's lock state with: through the relay, a right
/// password binds at once and a wrong one is refused late.
#[tokio::test]
async fn simple_bind_reports_the_directorys_result_code() {
    let r = relay(directory(false).await, Duration::from_millis(100)).await;
    let t = Duration::from_secs(20);
    assert_eq!(simple_bind(r.addr(), "uid=a", "right", t).await, Ok(0));
    assert_eq!(simple_bind(r.addr(), "uid=a", "wrong", t).await, Ok(49));
    assert_eq!(r.counts().binds_failed, 1);
}

#[test]
fn the_splitter_cuts_messages_at_their_boundaries_whatever_the_reads() {
    let ok = encode(bind_response(1, ResultCode::Success, ""));
    let refused = encode(bind_response(2, ResultCode::InvalidCredentials, "no"));
    let busy = encode(bind_response(3, ResultCode::Busy, ""));
    let notice = encode(response::notice_of_disconnection(
        ResultCode::Unavailable,
        "bye",
    ));
    let stream: Vec<u8> = [ok.as_slice(), &refused, &busy, &notice].concat();
    let expected = vec![
        (ok.clone(), PieceKind::SucceededBind),
        (refused.clone(), PieceKind::FailedBind),
        (busy.clone(), PieceKind::FailedBind),
        (notice.clone(), PieceKind::Other),
    ];
    // Every read size from one byte to the whole stream at once.
    for size in 1..=stream.len() {
        let mut s = Splitter::default();
        let mut got = Vec::new();
        for part in stream.chunks(size) {
            s.push(part);
            while let Some(p) = s.next_piece() {
                got.push((p.bytes, p.kind));
            }
        }
        assert_eq!(got, expected, "reads of {size} bytes");
    }
}

#[test]
fn bytes_that_are_not_ldap_pass_through_unchanged() {
    let ok = encode(bind_response(1, ResultCode::Success, ""));
    // A TLS record after a StartTLS answer: from then on nothing is framed or held.
    let tls = [0x16, 0x03, 0x03, 0x00, 0x02, 0xaa, 0xbb];
    let mut s = Splitter::default();
    s.push(&[ok.as_slice(), &tls].concat());
    assert_eq!(s.next_piece().unwrap().kind, PieceKind::SucceededBind);
    let p = s.next_piece().unwrap();
    assert_eq!(
        (p.bytes.as_slice(), p.kind),
        (&tls[..], PieceKind::Unframed)
    );
    let refused = encode(bind_response(2, ResultCode::InvalidCredentials, ""));
    s.push(&refused);
    assert_eq!(s.next_piece().unwrap().kind, PieceKind::Unframed);
    assert!(s.next_piece().is_none());
}
