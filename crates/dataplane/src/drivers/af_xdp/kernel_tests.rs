use super::bpf::{XdpMode, XdpProgram};
use super::socket::{Umem, Xsk, XskOptions, ZeroCopy};
use super::*;

/// Runs `f` on a thread of its own in a new network namespace with `lo` up, when root;
/// else skips (or fails under `CI=true`).
pub(crate) fn in_new_netns(f: impl FnOnce() + Send + 'static) {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
        assert!(!ci, "AF_XDP kernel tests need root, and CI=true requires them to run");
        eprintln!("SKIP: AF_XDP kernel tests need root");
        return;
    }
    std::thread::spawn(move || {
        // SAFETY: unshare(2) moves only this thread into a new network namespace.
        assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0, "{}", std::io::Error::last_os_error());
        lo_up();
        f();
    })
    .join()
    .expect("the test thread");
}

/// Sets `lo` (ifindex 1 in a new namespace) up.
fn lo_up() {
    // SAFETY: a plain datagram socket for the interface ioctls, closed below; `ifreq` is
    // plain data, the name is NUL-terminated, and the ioctls read and write only it.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        assert!(fd >= 0);
        let mut req: libc::ifreq = std::mem::zeroed();
        req.ifr_name[..2].copy_from_slice(&[b'l' as libc::c_char, b'o' as libc::c_char]);
        assert_eq!(libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req), 0);
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        assert_eq!(libc::ioctl(fd, libc::SIOCSIFFLAGS, &mut req), 0);
        libc::close(fd);
    }
}

#[test]
fn frames_arrive_in_our_buffers_and_sent_ones_come_back() {
    in_new_netns(|| {
        let mut pool = BufferPool::new(1024).unwrap();
        let (addr, len) = pool.umem_region();
        let opts = XskOptions { ifindex: 1, queue: 0, ring_size: 64, rx: true, zero_copy: ZeroCopy::Auto };
        let chunk_bytes = chunk_size(pool.stride());
        // SAFETY: `pool` outlives `x` (declared first, dropped last) and lends buffers only
        // through the rings below.
        let mut x = unsafe { Xsk::open(Umem { addr, len, chunk: chunk_bytes }, &opts, None) }.unwrap();
        assert!(!x.zero_copy, "lo has no zero-copy");
        let program = XdpProgram::load(1).unwrap();
        program.insert(0, x.fd()).unwrap();
        let _attached = program.attach(1, XdpMode::Skb).unwrap();
        refill(&mut x, &mut pool);
        assert_eq!(pool.free_count(), 1024 - 64, "the fill ring holds 64 buffers");

        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.send_to(b"vecflow af-xdp", sock.local_addr().unwrap()).unwrap();
        let rx = x.rx.as_mut().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while rx.available(8) == 0 {
            assert!(std::time::Instant::now() < deadline, "no frame reached the rx ring");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let d = rx.read(0);
        rx.release(1);
        let (chunk, offset) = (d.addr & ADDR_MASK, (d.addr >> 48) as usize);
        let stride = pool.stride() as u64;
        assert_eq!((chunk % stride, offset), (0, RX_HEADROOM), "a whole chunk, the frame at the headroom");
        let i = (chunk / stride) as u32;
        *pool.meta_mut(i) = pool.placed(offset, d.len as usize, 1);
        let frame = pool.frame(i);
        assert_eq!(frame.len(), 14 + 20 + 8 + 14, "Ethernet, IPv4, UDP and the payload");
        assert_eq!(&frame[frame.len() - 14..], b"vecflow af-xdp");

        // Send it back out: the buffer goes to the kernel and returns by the completion ring.
        let free = pool.free_count();
        assert_eq!(send_run(&mut x, &mut pool, &[i]), 1);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while pool.free_count() == free {
            assert!(std::time::Instant::now() < deadline, "the sent buffer never completed");
            reclaim(&mut x, &mut pool);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(pool.free_count(), free + 1);

        // A second UMEM on the same queue is refused, and the error says why.
        let other = BufferPool::new(1024).unwrap();
        let (addr, len) = other.umem_region();
        // SAFETY: as above (it is refused anyway).
        let e = unsafe { Xsk::open(Umem { addr, len, chunk: chunk_bytes }, &opts, None) }.err().expect("a busy queue");
        assert!(e.to_string().contains("another AF_XDP socket is bound to this queue"), "{e}");
    });
}

#[test]
fn a_jumbo_frame_arrives_whole_in_one_buffer_and_leaves_in_pieces() {
    in_new_netns(|| {
        let mut pool = BufferPool::with_data_size(1024, 9216).unwrap();
        let (addr, len) = pool.umem_region();
        let opts = XskOptions { ifindex: 1, queue: 0, ring_size: 64, rx: true, zero_copy: ZeroCopy::Auto };
        let chunk = chunk_size(pool.stride());
        assert_eq!(chunk, 4096, "a page: the kernel's largest chunk");
        // SAFETY: `pool` outlives `x` (declared first, dropped last) and lends buffers only
        // through the rings below.
        let mut x = unsafe { Xsk::open(Umem { addr, len, chunk }, &opts, None) }.unwrap();
        let program = XdpProgram::load(1).unwrap();
        assert!(x.multi_buffer && program.frags, "this kernel has multi-buffer AF_XDP");
        program.insert(0, x.fd()).unwrap();
        let _attached = program.attach(1, XdpMode::Skb).unwrap();
        refill(&mut x, &mut pool);

        // 8 000 bytes of UDP payload: 8 042 bytes on `lo`, three chunks' worth.
        let payload: Vec<u8> = (0..8000u32).map(|k| (k % 251) as u8).collect();
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.send_to(&payload, sock.local_addr().unwrap()).unwrap();
        let mut g = Graph::of_config(&crate::config::Config::default(), pool);
        let sock_index = g.features.drivers.xsk.socks.len() as u16;
        g.features.drivers.xsk.socks.push(x);
        let mut q = RxQueue { port: 1, sock: sock_index, fd: -1 };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let v = loop {
            if let Some(v) = q.poll(&mut g) {
                break v;
            }
            assert!(std::time::Instant::now() < deadline, "no frame reached the rx ring");
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        assert_eq!(g.vectors[v].len(), 1, "one frame, one buffer");
        let i = g.vectors[v].indices()[0];
        let frame = g.pool.frame(i);
        assert_eq!(frame.len(), 14 + 20 + 8 + 8000, "Ethernet, IPv4, UDP and the whole payload");
        assert_eq!(&frame[42..], &payload[..], "the pieces in order");
        let free = g.pool.free_count();

        // Out again: three descriptors over the one buffer, which comes back once.
        let Graph { features, pool, .. } = &mut g;
        let x = &mut features.drivers.xsk.socks[usize::from(sock_index)];
        assert_eq!(send_run(x, pool, &[i]), 1);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while pool.free_count() == free {
            assert!(std::time::Instant::now() < deadline, "the sent buffer never completed");
            reclaim(x, pool);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        reclaim(x, pool);
        assert_eq!(pool.free_count(), free + 1, "the buffer came back exactly once");
    });
}
