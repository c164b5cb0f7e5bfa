use super::*;

#[test]
fn alloc_free_lifo_and_exhaustion() {
    let mut p = BufferPool::new(4).unwrap();
    let mut out = [0u32; 8];
    assert_eq!(p.alloc(&mut out[..3]), 3);
    assert_eq!(&out[..3], &[2, 1, 0]);
    assert_eq!(p.alloc(&mut out[3..8]), 1);
    assert_eq!(p.alloc(&mut out[..1]), 0);
    p.free(&[2]);
    assert_eq!(p.alloc(&mut out[..1]), 1);
    assert_eq!(out[0], 2, "the most recently freed buffer comes back first");
}

#[test]
fn settled_allocation_never_returns_a_buffer_freed_since() {
    let mut p = BufferPool::new(4).unwrap();
    let mut out = [0u32; 2];
    p.alloc(&mut out); // 0 and 1 in use; 2 and 3 free
    p.settle();
    p.free(&[1]);
    assert_eq!(p.settled_count(), 2);
    let a = p.alloc_settled().unwrap();
    let b = p.alloc_settled().unwrap();
    assert!(a != 1 && b != 1 && a != b);
    assert_eq!(p.alloc_settled(), None, "buffer 1 was freed after settling");
    assert_eq!(p.free_count(), 1);
    let mut one = [0u32; 1];
    assert_eq!((p.alloc(&mut one), one[0]), (1, 1), "plain allocation may take it");
}

#[test]
fn frames_do_not_overlap_and_stride_is_an_odd_number_of_lines() {
    for size in [MIN_DATA_SIZE, 2049, 4000, 9000, MAX_DATA_SIZE] {
        let stride = stride_for(size);
        assert!(stride.is_multiple_of(64) && (stride / 64) % 2 == 1, "{size}: {stride}");
        assert!(stride >= usize::from(size) + HEADROOM && stride < usize::from(size) + HEADROOM + 128);
    }
    assert_eq!((stride_for(DEFAULT_DATA_SIZE), MAX_STRIDE), (2112, 9280));
    let mut p = BufferPool::new(3).unwrap();
    let mut ids = [0u32; 3];
    p.alloc(&mut ids);
    for &i in &ids {
        p.write_frame(i, &[i as u8; 100]);
    }
    for &i in &ids {
        assert!(p.frame(i).iter().all(|&b| b == i as u8));
        assert_eq!(p.frame(i).len(), 100);
    }
    assert_eq!(p.write_frame(0, &[0u8; 5000]), p.data_capacity());
    assert_eq!(p.data_capacity(), usize::from(DEFAULT_DATA_SIZE));
}

#[test]
fn jumbo_buffers_hold_their_data_size_and_no_more() {
    let mut p = BufferPool::with_data_size(4, 9000).unwrap();
    assert_eq!((p.stride(), p.data_capacity()), (stride_for(9000), stride_for(9000) - HEADROOM));
    let mut ids = [0u32; 4];
    p.alloc(&mut ids);
    for &i in &ids {
        p.write_frame(i, &vec![i as u8 + 1; 9000]);
    }
    for &i in &ids {
        assert!(p.frame(i).len() == 9000 && p.frame(i).iter().all(|&b| b == i as u8 + 1));
    }
    assert_eq!(p.write_frame(0, &[0u8; 12_000]), p.data_capacity());
    assert_eq!(p.received(20_000, 1).len() as usize, p.data_capacity());
    assert!(p.frame(1).iter().all(|&b| b == 2), "a full buffer does not spill into the next");
}

#[test]
fn any_index_stays_inside_the_pool() {
    let mut p = BufferPool::new(3).unwrap();
    for i in [3, 4, 1000, u32::MAX] {
        p.write_frame(i, &[7; 60]);
        assert_eq!(p.frame(i), &[7; 60][..]);
        p.meta_mut(i).rx_if = 9;
    }
    assert_eq!(p.meta(u32::MAX).rx_if, 9, "indices alias inside the mapped range");
}

#[test]
#[should_panic(expected = "is not in the pool")]
fn freeing_a_foreign_index_panics() {
    let mut p = BufferPool::new(4).unwrap();
    p.alloc(&mut [0; 1]);
    p.free(&[4]);
}

#[test]
#[should_panic(expected = "double free")]
fn freeing_more_than_the_capacity_panics() {
    let mut p = BufferPool::new(4).unwrap();
    p.free(&[0]);
}

#[test]
fn head_room_is_bounded_and_the_frame_end_never_moves() {
    let mut p = BufferPool::new(1).unwrap();
    p.write_frame(0, &[1; 100]);
    assert!(p.grow_head(0, HEADROOM + 1).is_none(), "more than the headroom");
    assert_eq!(p.grow_head(0, HEADROOM).map(|f| f.len()), Some(100 + HEADROOM));
    assert!(p.shrink_head(0, 100 + HEADROOM + 1).is_none(), "more than the frame");
    assert_eq!(p.shrink_head(0, 100 + HEADROOM).map(|f| f.len()), Some(0));
    let m = p.meta(0);
    assert_eq!(usize::from(m.offset()) + usize::from(m.len()), HEADROOM + 100);
    p.write_frame(0, &[2; DEFAULT_DATA_SIZE as usize + 10]);
    assert_eq!(usize::from(p.meta(0).offset()) + usize::from(p.meta(0).len()), p.stride());
    assert_eq!(p.write_frame_at(0, p.stride() + 5, &[3; 10]), 0, "no room at all");
    assert_eq!(p.write_frame_at(0, 0, &[4; 10]), 10);
    assert!(p.grow_head(0, 1).is_none(), "no headroom");
}
