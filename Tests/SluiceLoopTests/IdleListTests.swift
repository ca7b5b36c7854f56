import SluiceLoop
import XCTest

final class IdleListTests: XCTestCase {
    final class Item: IdleListMember {
        let n: Int
        var idleListEntry: IdleListEntry?
        init(_ n: Int) { self.n = n }
    }

    func testOldestIsTheLeastRecentlyTouched() {
        let list = IdleList<Item>()
        let items = (0..<4).map(Item.init)
        XCTAssertNil(list.oldest)
        for item in items { list.touch(item) }
        XCTAssertEqual(list.count, 4)
        XCTAssertEqual(list.oldest?.n, 0)
        list.touch(items[0])  // head to the end
        XCTAssertEqual(list.oldest?.n, 1)
        list.touch(items[2])  // middle to the end
        list.touch(items[2])  // already last
        list.remove(items[1])  // the head
        XCTAssertEqual(list.oldest?.n, 3)
        list.remove(items[2])  // the tail
        list.remove(items[2])  // absent: no effect
        XCTAssertEqual(list.count, 2)
        XCTAssertEqual(list.oldest?.n, 3)
        list.remove(items[3])
        XCTAssertEqual(list.oldest?.n, 0)
        list.remove(items[0])
        XCTAssertNil(list.oldest)
        list.touch(items[1])
        XCTAssertEqual(list.oldest?.n, 1, "usable again after running empty")
    }

    /// Random touches and removals against a plain array kept in the same order.
    func testAgreesWithAReferenceModel() {
        var rng = SystemRandomNumberGenerator()
        let items = (0..<50).map(Item.init)
        let list = IdleList<Item>()
        var model: [Int] = []
        for _ in 0..<20_000 {
            let item = items[Int.random(in: 0..<items.count, using: &rng)]
            model.removeAll { $0 == item.n }
            if Bool.random(using: &rng) || model.count < 5 {
                list.touch(item)
                model.append(item.n)
            } else {
                list.remove(item)
            }
            XCTAssertEqual(list.count, model.count)
            XCTAssertEqual(list.oldest?.n, model.first)
        }
    }

    /// Element and entry hold each other while listed: removing an element, or dropping the list,
    /// must let go of both.
    func testLetsGoOfWhatItRemovesAndOfAllWhenDropped() {
        weak var removed: Item?
        weak var kept: Item?
        var list: IdleList<Item>? = IdleList()
        do {
            let a = Item(0), b = Item(1)
            list!.touch(a)
            list!.touch(b)
            list!.remove(a)
            XCTAssertNil(a.idleListEntry)
            XCTAssertNotNil(b.idleListEntry)
            removed = a
            kept = b
        }
        XCTAssertNil(removed, "a removed element is not held")
        XCTAssertEqual(kept?.n, 1, "a listed element is held by its list")
        list = nil
        XCTAssertNil(kept, "a dropped list lets go of its elements")
    }

    func testALongListIsReleasedWithoutDeepRecursion() {
        let items = (0..<200_000).map(Item.init)
        var list: IdleList<Item>? = IdleList()
        for item in items { list!.touch(item) }
        XCTAssertEqual(list!.oldest?.n, 0)
        list = nil
    }
}
