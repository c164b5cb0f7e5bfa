//! The IPv6 table under readers looking up while the writer rebuilds, retires and reuses
//! its subtrees.

use super::*;

/// A subtree replaced is freed only after an online reader has been quiescent: the batch
/// that retires it does not return while the reader sits between two quiescent states.
#[test]
fn reclaim_waits_for_an_online_reader() {
    let q = Arc::new(Qsbr::new(1));
    let mut w = Fib6Writer::new(Arc::new(Fib6::<TEST_FIRST>::new().unwrap()), q.clone());
    let host: Ipv6Addr = "2001:db8::1".parse().unwrap();
    w.apply(&[(host, 128, Some(2))]).unwrap();
    let mut reader = q.register(0);
    reader.quiescent(); // online, holding (as far as QSBR knows) the subtree of 2001:db8::/18
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let writer = std::thread::spawn(move || {
        w.apply(&[(host, 128, None)]).unwrap(); // unpublishes the subtree and frees it
        d.store(true, Ordering::Release);
        w
    });
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(!done.load(Ordering::Acquire), "freed while a reader could still hold it");
    while !done.load(Ordering::Acquire) {
        reader.quiescent();
        std::thread::yield_now();
    }
    let w = writer.join().unwrap();
    assert_eq!(w.subtrees(), 0);
}

/// A reader looking up continuously while the writer rebuilds the same slot's subtree again
/// and again sees each address's old or new answer, never garbage.
#[test]
fn readers_see_old_or_new_never_garbage_during_updates() {
    let q = Arc::new(Qsbr::new(1));
    let mut w = Fib6Writer::new(Arc::new(Fib6::<TEST_FIRST>::new().unwrap()), q.clone());
    let base = u128::from("2001:db8::".parse::<Ipv6Addr>().unwrap());
    w.apply(&[(Ipv6Addr::from(base), 32, Some(1))]).unwrap();
    let fib = w.fib().clone();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let mut qr = q.register(0);
    qr.quiescent();
    // Host x of 2001:db8:0:x::/64 has adjacency 2 + x % 2 when present.
    let host = move |x: u128| base | x << 64 | 1;
    let reader = std::thread::spawn(move || {
        let mut seen = 0u64;
        let addrs: Vec<[u8; 16]> = (0..64).map(|x| host(x).to_be_bytes()).collect();
        let mut out = [0u32; 64];
        loop {
            fib.lookup_batch(Isa::best(), &addrs, &mut out);
            for (x, &e) in out.iter().enumerate() {
                let l = Leaf::decode(e).expect("2001:db8::/32 covers it");
                let scalar = fib.lookup(host(x as u128)).expect("covered");
                for l in [l, scalar] {
                    let ok = (l.adj, l.prefix_len) == (1, 32) || (l.adj, l.prefix_len) == (2 + x as u32 % 2, 64);
                    assert!(ok, "garbage for host {x}: {l:?}");
                }
                seen += 1;
            }
            qr.quiescent();
            if s.load(Ordering::Relaxed) {
                break;
            }
        }
        seen
    });
    for round in 0..if cfg!(miri) { 8 } else { 2000u32 } {
        let x = u128::from(round % 64);
        let net = Ipv6Addr::from(host(x) & key_mask(64));
        w.apply(&[(net, 64, Some(2 + round % 2))]).unwrap();
        w.apply(&[(net, 64, None)]).unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
    assert_eq!(w.subtrees(), 1, "the /32's subtree");
}

/// A reader whose walks take escapes while the writer moves the slot's window (a /19 added
/// and deleted beside a /32: the window starts at bit 19, then 32) finishes each escape at the
/// depth of the tree it started in: it sees the /120 and the /32, never garbage.
#[test]
fn escapes_finish_in_their_own_tree_while_the_window_moves() {
    let q = Arc::new(Qsbr::new(1));
    let mut w = Fib6Writer::new(Arc::new(Fib6::<TEST_FIRST>::new().unwrap()), q.clone());
    let a = |s: &str| s.parse::<Ipv6Addr>().unwrap();
    let host = u128::from(a("2001:db8:1:2:3:4:5:600"));
    w.apply(&[(a("2001:db8::"), 32, Some(1)), (Ipv6Addr::from(host), 120, Some(5))]).unwrap();
    let fib = w.fib().clone();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let mut qr = q.register(0);
    qr.quiescent();
    let reader = std::thread::spawn(move || {
        // Inside the /120 (first, last), and just past it (the /32's).
        let probes = [(host, 5, 120), (host | 0xff, 5, 120), (host + 0x100, 1, 32), (host - 1, 1, 32)];
        let addrs: Vec<[u8; 16]> = probes.iter().map(|p| p.0.to_be_bytes()).collect();
        let mut out = [0u32; 4];
        let mut seen = 0u64;
        while !s.load(Ordering::Relaxed) {
            for isa in Isa::available() {
                fib.lookup_batch(isa, &addrs, &mut out);
                for (&(addr, adj, len), &e) in probes.iter().zip(&out) {
                    let l = Leaf::decode(e);
                    assert_eq!(l, Some(Leaf { adj, prefix_len: len }), "{} ({})", Ipv6Addr::from(addr), isa.name());
                    seen += 1;
                }
            }
            qr.quiescent();
        }
        seen
    });
    for _ in 0..if cfg!(miri) { 4 } else { 2000 } {
        w.apply(&[(a("2001::"), 19, Some(9))]).unwrap();
        w.apply(&[(a("2001::"), 19, None)]).unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
}
