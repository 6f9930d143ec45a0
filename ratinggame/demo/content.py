"""Demo content: captions at every level of the VICR scale for photographs shipped in scikit-image.

Pure data, read by ``ratinggame.demo.loader.load_demo``. The images are files of the scikit-image
package (``skimage/data``), so nothing is downloaded. Captions are written the way
captioning models and people write them; ``source`` says which kind each imitates
("mismatched" = a caption written for another image, which always rates 1).

Expert ratings follow the 5-level scale of the VICR paper (Table 2, SPEC.md section 1):
5 adds an interpretation of the setting or event to a complete, spatially placed
description; 4 places things in space but interprets nothing; 3 names the relevant objects
but not where they are nor the setting; 2 has errors but still gives an idea of the
picture; 1 gets the objects or the idea wrong. Every explanation quotes the level it applies.

The tutorial is ordered to teach (a clear 5 and a clear 1 first, then the finer
distinctions); probation is balanced, four pairs per level. Each game caption carries the
``level`` it was written for: the demo has no model weights to prime its game pairs with
(SPEC section 4), so ``ratinggame.demo.loader`` primes them from these levels, under a model
identity that says so, and its demo crowd rates around them. The lists are shared,
read-only data: copy before changing anything.
"""

# key -> file name in skimage/data
DEMO_IMAGES: dict[str, str] = {
    "astronaut": "astronaut.png",
    "camera": "camera.png",
    "chelsea": "chelsea.png",
    "coffee": "coffee.png",
    "coins": "coins.png",
    "horse": "horse.png",
    "hubble": "hubble_deep_field.jpg",
    "rocket": "rocket.jpg",
    "motorcycle": "motorcycle_left.png",
    "moon": "moon.png",
    "retina": "retina.jpg",
    "page": "page.png",
    "clock": "clock_motion.png",
    "text": "text.png",
    "ihc": "ihc.png",
    "brick": "brick.png",
    "grass": "grass.png",
    "gravel": "gravel.png",
    "cell": "cell.png",
}

# Good human-style captions per image, used as the references of game pairs (RefCLIP-S).
_REFERENCES: dict[str, list[str]] = {
    "astronaut": [
        "an astronaut in an orange spacesuit poses in front of an american flag",
        "a smiling woman astronaut with her helmet and a model of the space shuttle",
        "official portrait of a female astronaut in an orange flight suit",
    ],
    "camera": [
        "a man looking through a camera on a tripod in a field",
        "a cameraman in a dark coat films on a grassy lawn",
        "black and white photo of a man using a camera on a tripod outdoors",
    ],
    "chelsea": [
        "a close up of a tabby cat's face",
        "a brown striped cat with big green eyes",
        "a cat staring intently with yellow-green eyes",
    ],
    "coffee": [
        "a cup of espresso on a red saucer with a spoon",
        "a small cup of coffee sitting on a wooden table",
        "an espresso in a red cup and saucer on a wood table",
    ],
    "coins": [
        "rows of old coins on a dark background",
        "a collection of ancient coins laid out in rows",
        "black and white photo of many antique coins",
    ],
    "horse": [
        "a black silhouette of a horse on a white background",
        "the outline of a standing horse in black",
        "a black horse shape facing right",
    ],
    "hubble": [
        "a deep space photo full of distant galaxies",
        "many colorful galaxies against the black of space",
        "a telescope image showing thousands of galaxies",
    ],
    "rocket": [
        "a rocket on a launch pad at dusk",
        "a white rocket between lightning towers before launch",
        "a rocket lit up by floodlights on the launch pad at twilight",
    ],
    "motorcycle": [
        "a red motorcycle parked in a garage",
        "a red yamaha motorcycle on its kickstand in front of shelves",
        "a motorcycle parked inside a cluttered workshop",
    ],
    "moon": [
        "the cratered surface of the moon",
        "a black and white close up of the lunar surface with small craters",
        "gray moon surface with craters and dark patches",
    ],
    "retina": [
        "a photo of the retina at the back of an eye",
        "a fundus image showing the optic disc and blood vessels",
        "an orange retina with branching blood vessels",
    ],
    "page": [
        "a page of a book about region-based segmentation",
        "printed text with the heading region-based segmentation",
        "a photo of a textbook page with a code example",
    ],
    "text": [
        "handwritten math equations on lined paper",
        "equations written in pen, photographed at an angle",
        "close up of handwritten formulas on a sheet of paper",
    ],
    "ihc": [
        "a microscope image of stained tissue",
        "tissue sample with brown stained glands and blue nuclei",
        "immunohistochemistry staining of tissue under a microscope",
    ],
    "brick": [
        "a brick wall",
        "rows of long bricks seen at an angle",
        "black and white photo of a brick surface",
    ],
    "grass": [
        "close up of grass with a few dead leaves",
        "black and white photo of a lawn",
    ],
    "gravel": [
        "a close up of gravel",
        "small stones covering the ground",
        "black and white photo of loose gravel",
    ],
}

TUTORIAL: list[dict] = [
    {
        "image": "astronaut",
        "caption": (
            "An astronaut in an orange flight suit smiles for her official portrait, with an American flag "
            "on the left, a space shuttle model behind her and her helmet in front of her."
        ),
        "source": "coco",
        "expert_rating": 5,
        "explanation": (
            "Everything important is here and correct: the astronaut, her orange suit, the flag, the shuttle "
            "model and the helmet, each placed in space (on the left, behind her, in front of her). Calling it "
            "an official portrait interprets the setting, which is what level 5 asks for: 'Interpretation of "
            "overall setting and/or event is included.'"
        ),
    },
    {
        "image": "coffee",
        "caption": "a red motorcycle parked in a garage next to a wooden bench",
        "source": "mismatched",
        "expert_rating": 1,
        "explanation": (
            "This caption was written for a different photo. There is no motorcycle, garage or bench here, only "
            "a cup of coffee on a saucer, so 'Objects are incorrectly identified' and 'The caption gives the "
            "wrong idea about what is happening in the image': a 1. Sharing a colour (red) earns nothing."
        ),
    },
    {
        "image": "chelsea",
        "caption": "a tabby cat with green eyes",
        "source": "pythia",
        "expert_rating": 3,
        "explanation": (
            "The cat and its green eyes are right, so 'Relevant objects are correctly identified'. But nothing "
            "says where things are or what the setting is, which is level 3: 'describes what is seen but not "
            "where objects are in space' and 'no description of the overall setting'."
        ),
    },
    {
        "image": "camera",
        "caption": (
            "a man in a dark coat looking through a camera on a tripod in a grassy field with buildings in the distance"
        ),
        "source": "coco",
        "expert_rating": 4,
        "explanation": (
            "The man, his coat, the camera, the tripod, the field and the distant buildings are all correct, "
            "and the caption places them in space ('in a grassy field', 'in the distance'). It stops there: "
            "nothing says what is going on, such as someone filming outdoors on a cold day, so level 4 fits: "
            "'There is no interpretation of an event.'"
        ),
    },
    {
        "image": "motorcycle",
        "caption": "a red scooter parked on the street next to a bench",
        "source": "pythia",
        "expert_rating": 2,
        "explanation": (
            "Some of this is right: a red two-wheeler is parked next to a bench. But it is a motorcycle, not a "
            "scooter, and it stands in a garage, not on a street. 'Objects are partially correctly identified "
            "with some errors, but the caption is accurate enough to give an idea of what is happening': a 2."
        ),
    },
    {
        "image": "rocket",
        "caption": "a lighthouse on a beach at sunset",
        "source": "pythia",
        "expert_rating": 1,
        "explanation": (
            "The tall white shape is a rocket on a launch pad, not a lighthouse, and there is no beach. Because "
            "the main object is misidentified, the caption 'gives the wrong idea about what is happening in the "
            "image', which is a 1 even though the evening sky is about right."
        ),
    },
    {
        "image": "coffee",
        "caption": (
            "A freshly pulled espresso with golden crema sits in a red cup on its saucer, a small spoon "
            "resting beside it on a wooden café table."
        ),
        "source": "coco",
        "expert_rating": 5,
        "explanation": (
            "The espresso, crema, cup, saucer, spoon and table are all right and placed ('on its saucer', "
            "'beside it', 'on a wooden table'). 'Freshly pulled' and 'café' interpret the scene: a coffee has "
            "just been served. That interpretation of the setting is what lifts a caption from a 4 to a 5."
        ),
    },
    {
        "image": "coins",
        "caption": "Many old coins with faces and figures on them.",
        "source": "flickr8k",
        "expert_rating": 3,
        "explanation": (
            "The coins and the faces on them are right ('Relevant objects are correctly identified'), but the "
            "caption does not say how they are laid out (four neat rows on a dark background) or what the "
            "collection is. That matches level 3: 'describes what is seen but not where objects are in space'."
        ),
    },
    {
        "image": "astronaut",
        "caption": "a man in an orange jacket standing in front of a flag",
        "source": "pythia",
        "expert_rating": 2,
        "explanation": (
            "The orange outfit and the flag are right, so you get a rough idea of the picture. But the person "
            "is a woman, the 'jacket' is a spacesuit, and the helmet and shuttle model are missed. 'Partially "
            "correctly identified with some errors' and 'might not identify everything' describe a 2."
        ),
    },
    {
        "image": "rocket",
        "caption": (
            "a white rocket standing on a launch pad between tall metal towers, with bright lights at its "
            "base and a dark blue sky above"
        ),
        "source": "coco",
        "expert_rating": 4,
        "explanation": (
            "Rocket, launch pad, towers, lights and sky are correct and their positions are given ('between', "
            "'at its base', 'above'). It does not interpret the event, for instance a rocket waiting for an "
            "evening launch, so it is a 4, not a 5: 'There is no interpretation of an event.'"
        ),
    },
]

PROBATION: list[dict] = [
    {
        "image": "hubble",
        "caption": (
            "A telescope's deep view of space: thousands of distant galaxies, spirals and glowing orange "
            "ellipticals, scattered across the black sky, with a few bright stars in front."
        ),
        "source": "coco",
        "expert_rating": 5,
        "explanation": (
            "The galaxies, their shapes and colours, the black background and the foreground stars are right "
            "and placed ('scattered across', 'in front'). Saying it is a telescope's deep view of space "
            "interprets what we are looking at: 'Interpretation of overall setting and/or event is included.'"
        ),
    },
    {
        "image": "hubble",
        "caption": "a cup of espresso on a red saucer with a spoon",
        "source": "mismatched",
        "expert_rating": 1,
        "explanation": (
            "This caption belongs to another photo: there is no cup, saucer or spoon, only galaxies in space. "
            "'Objects are incorrectly identified. The caption gives the wrong idea about what is happening in "
            "the image.'"
        ),
    },
    {
        "image": "coins",
        "caption": "four rows of old silver coins laid out on a dark background, each stamped with a head or a figure",
        "source": "coco",
        "expert_rating": 4,
        "explanation": (
            "The coins, their designs and their arrangement in rows on a dark background are all right, so the "
            "caption 'describes what is seen and where things are in space'. It does not say what this is, "
            "such as a display of ancient coins, so: 'There is no interpretation of an event.'"
        ),
    },
    {
        "image": "coffee",
        "caption": "a cup of coffee and a spoon",
        "source": "pythia",
        "expert_rating": 3,
        "explanation": (
            "The cup of coffee and the spoon are right, but the saucer and table are missing and nothing says "
            "where anything is. 'Relevant objects are correctly identified' without 'where objects are in "
            "space' is a 3."
        ),
    },
    {
        "image": "camera",
        "caption": "a man taking a picture with a camera on a tripod at the beach",
        "source": "pythia",
        "expert_rating": 2,
        "explanation": (
            "The man, the camera and the tripod are right, but he is standing on a lawn with buildings behind "
            "him, not at a beach. The caption still gives an idea of what is happening, with an error: "
            "'Objects are partially correctly identified with some errors', a 2."
        ),
    },
    {
        "image": "motorcycle",
        "caption": (
            "A red Yamaha motorcycle is parked on its kickstand in a cluttered home garage, with metal shelves "
            "of boxes behind it and a wooden bench to the left."
        ),
        "source": "coco",
        "expert_rating": 5,
        "explanation": (
            "Motorcycle, kickstand, shelves, boxes and bench are correct and placed ('behind it', 'to the "
            "left'). 'Cluttered home garage' interprets the setting rather than just listing objects, which "
            "is the level 5 step: 'Interpretation of overall setting and/or event is included.'"
        ),
    },
    {
        "image": "brick",
        "caption": "a stack of wooden planks",
        "source": "pythia",
        "expert_rating": 1,
        "explanation": (
            "These are rows of bricks with mortar between them, not wooden planks, and nothing is stacked. "
            "'Objects are incorrectly identified', so the caption gives the wrong idea: a 1."
        ),
    },
    {
        "image": "retina",
        "caption": (
            "the inside of an eye, with red blood vessels spreading out from a bright spot on the left "
            "and a darker spot in the middle"
        ),
        "source": "other",
        "expert_rating": 4,
        "explanation": (
            "The eye, the blood vessels, the bright optic disc and the darker centre are right and placed "
            "('on the left', 'in the middle'). It does not say this is a medical photo of the retina from an "
            "eye exam, so there is no interpretation: a 4."
        ),
    },
    {
        "image": "rocket",
        "caption": "A rocket and some towers with lights.",
        "source": "flickr8k",
        "expert_rating": 3,
        "explanation": (
            "Rocket, towers and lights are 'correctly identified', but the caption does not say where they are "
            "(the rocket between the towers, the lights at the base) or describe the launch pad at dusk. "
            "That is level 3: 'no description of the overall setting'."
        ),
    },
    {
        "image": "coins",
        "caption": "a pile of gold coins spilled on a table",
        "source": "coco",
        "expert_rating": 2,
        "explanation": (
            "There are coins, so the idea is roughly right, but they are not in a pile: they are laid out in "
            "neat rows on a dark background, and nothing shows they are gold. 'Partially correctly identified "
            "with some errors' is a 2."
        ),
    },
    {
        "image": "camera",
        "caption": (
            "A cameraman in a heavy winter coat and gloves films on a wide campus lawn, bent over a camera on "
            "a tripod, with domed buildings and a tower far behind him."
        ),
        "source": "other",
        "expert_rating": 5,
        "explanation": (
            "The man, coat, gloves, camera, tripod, lawn and buildings are right and placed ('bent over', 'far "
            "behind him'). 'Winter', 'films' and 'campus' interpret the event and the setting, so this is a 5: "
            "'Interpretation of overall setting and/or event is included.'"
        ),
    },
    {
        "image": "horse",
        "caption": "the family went to the farm today. we saw lots of cows.",
        "source": "glacnet",
        "expert_rating": 1,
        "explanation": (
            "The picture is a single black horse silhouette on white: no family, no farm and no cows. "
            "'Objects are incorrectly identified. The caption gives the wrong idea about what is happening in "
            "the image.'"
        ),
    },
    {
        "image": "ihc",
        "caption": "brown and blue stained cells",
        "source": "other",
        "expert_rating": 3,
        "explanation": (
            "The stained cells and their colours are right, but the caption does not say where the brown and "
            "blue areas are, nor that this is tissue under a microscope. 'Relevant objects are correctly "
            "identified' without place or setting is a 3."
        ),
    },
    {
        "image": "moon",
        "caption": "the surface of the moon with a large crater in the middle",
        "source": "other",
        "expert_rating": 2,
        "explanation": (
            "It is the surface of the moon, but there is no large crater in the middle: there is a small bright "
            "crater near the top left and dark patches below the centre. Right idea, wrong detail: 'partially "
            "correctly identified with some errors', a 2."
        ),
    },
    {
        "image": "astronaut",
        "caption": (
            "A smiling woman in an orange spacesuit, with an American flag on one side and a model space "
            "shuttle on the other."
        ),
        "source": "flickr8k",
        "expert_rating": 4,
        "explanation": (
            "The woman, her spacesuit, the flag and the shuttle model are right and placed ('on one side', 'on "
            "the other'); the helmet is missed, so 'not every element is completely identified'. Nothing "
            "interprets it as an official astronaut portrait: 'There is no interpretation of an event.'"
        ),
    },
    {
        "image": "retina",
        "caption": "a red planet glowing in the dark sky",
        "source": "pythia",
        "expert_rating": 1,
        "explanation": (
            "The round red shape is a photo of the retina inside an eye, with blood vessels, not a planet in "
            "the sky. 'Objects are incorrectly identified' and the idea is wrong, so it is a 1."
        ),
    },
    {
        "image": "page",
        "caption": "a printed page with a heading and some text",
        "source": "coco",
        "expert_rating": 3,
        "explanation": (
            "A printed page with a heading and text is correct, but the caption does not say where things are "
            "(heading on top, code line at the bottom) or what the page is about. 'Relevant objects are "
            "correctly identified' with nothing more is a 3."
        ),
    },
    {
        "image": "text",
        "caption": "typed math formulas on a sheet of paper",
        "source": "coco",
        "expert_rating": 2,
        "explanation": (
            "Math formulas on paper is right, but they are handwritten, not typed, and the caption misses that "
            "the page is photographed at a steep angle. 'Objects are partially correctly identified with some "
            "errors': a 2."
        ),
    },
    {
        "image": "chelsea",
        "caption": (
            "A close-up portrait of a tabby pet cat indoors, its wide green eyes and pink nose in sharp focus "
            "while the room behind it is blurred."
        ),
        "source": "coco",
        "expert_rating": 5,
        "explanation": (
            "Cat, eyes, nose and blurred room are right and placed ('behind it'). 'Portrait of a pet cat "
            "indoors' interprets the setting, which is what separates a 5 from a 4: 'Interpretation of overall "
            "setting and/or event is included.'"
        ),
    },
    {
        "image": "horse",
        "caption": "a black silhouette of a horse standing on a white background, facing right",
        "source": "coco",
        "expert_rating": 4,
        "explanation": (
            "The horse silhouette and the white background are right, and 'facing right' says how it is "
            "placed. Nothing says what the picture is for, such as a clip-art icon, so: 'There is no "
            "interpretation of an event', a 4."
        ),
    },
]

GAME: list[dict] = [
    # astronaut
    {
        "image": "astronaut",
        "caption": "a woman in an orange space suit smiling",
        "source": "coco",
        "level": 3,
        "references": _REFERENCES["astronaut"],
    },
    {
        "image": "astronaut",
        "caption": (
            "astronaut eileen collins poses for her official nasa portrait, helmet in front of her, with the "
            "flag and a shuttle model behind her"
        ),
        "source": "other",
        "level": 5,
        "references": _REFERENCES["astronaut"],
    },
    {
        "image": "astronaut",
        "caption": "a man in a red jacket holding a bowling ball",
        "source": "pythia",
        "level": 1,
        "references": _REFERENCES["astronaut"],
    },
    {
        "image": "astronaut",
        "caption": "Our trip to the space center. We met a real astronaut! She was very nice.",
        "source": "glacnet",
        "level": 2,
        "references": _REFERENCES["astronaut"],
    },
    {
        "image": "astronaut",
        "caption": "a cat looking up with big green eyes",
        "source": "mismatched",
        "level": 1,
    },
    # camera
    {
        "image": "camera",
        "caption": "a man with a camera on a tripod",
        "source": "pythia",
        "level": 3,
        "references": _REFERENCES["camera"],
    },
    {
        "image": "camera",
        "caption": "black and white photo of a man filming on a lawn with buildings behind him",
        "source": "coco",
        "level": 4,
        "references": _REFERENCES["camera"],
    },
    {
        "image": "camera",
        "caption": "a man in a suit playing golf on a field",
        "source": "pythia",
        "level": 2,
        "references": _REFERENCES["camera"],
    },
    {
        "image": "camera",
        "caption": (
            "A man in a long coat peers into a camera mounted on a tripod, standing on a wide lawn with "
            "buildings far behind."
        ),
        "source": "flickr8k",
        "level": 4,
        "references": _REFERENCES["camera"],
    },
    # chelsea
    {
        "image": "chelsea",
        "caption": "a cat",
        "source": "pythia",
        "level": 3,
        "references": _REFERENCES["chelsea"],
    },
    {
        "image": "chelsea",
        "caption": "a close up of a cat's face with green eyes and a pink nose",
        "source": "coco",
        "level": 4,
        "references": _REFERENCES["chelsea"],
    },
    {
        "image": "chelsea",
        "caption": "a tiger in the zoo looking at the camera",
        "source": "pythia",
        "level": 2,
        "references": _REFERENCES["chelsea"],
    },
    {
        "image": "chelsea",
        "caption": "a pet tabby cat at home stares intently at something just past the camera",
        "source": "other",
        "level": 5,
    },
    # coffee
    {
        "image": "coffee",
        "caption": "a cup of coffee on a saucer",
        "source": "coco",
        "level": 4,
        "references": _REFERENCES["coffee"],
    },
    {
        "image": "coffee",
        "caption": "a red cup of tea with a spoon on a plate",
        "source": "pythia",
        "level": 3,
        "references": _REFERENCES["coffee"],
    },
    {
        "image": "coffee",
        "caption": "Espresso in a red cup and saucer with a spoon, on a wooden table.",
        "source": "flickr8k",
        "level": 4,
        "references": _REFERENCES["coffee"],
    },
    {
        "image": "coffee",
        "caption": "a black and white photo of a man with a camera on a tripod",
        "source": "mismatched",
        "level": 1,
        "references": _REFERENCES["coffee"],
    },
    # coins
    {
        "image": "coins",
        "caption": "a bunch of coins on a table",
        "source": "pythia",
        "level": 3,
        "references": _REFERENCES["coins"],
    },
    {
        "image": "coins",
        "caption": "a collection of ancient coins, arranged in four neat rows on a black cloth for display",
        "source": "other",
        "level": 5,
        "references": _REFERENCES["coins"],
    },
    {
        "image": "coins",
        "caption": "a group of cookies on a baking tray",
        "source": "pythia",
        "level": 1,
        "references": _REFERENCES["coins"],
    },
    # horse
    {
        "image": "horse",
        "caption": "a black horse",
        "source": "pythia",
        "level": 3,
        "references": _REFERENCES["horse"],
    },
    {
        "image": "horse",
        "caption": "A black silhouette of a horse standing against a plain white background.",
        "source": "coco",
        "level": 4,
        "references": _REFERENCES["horse"],
    },
    {
        "image": "horse",
        "caption": "a black dog standing in the snow",
        "source": "pythia",
        "level": 1,
        "references": _REFERENCES["horse"],
    },
    # hubble
    {
        "image": "hubble",
        "caption": "stars in the night sky",
        "source": "pythia",
        "level": 2,
        "references": _REFERENCES["hubble"],
    },
    {
        "image": "hubble",
        "caption": "a colorful picture of many galaxies in space",
        "source": "coco",
        "level": 3,
        "references": _REFERENCES["hubble"],
    },
    {
        "image": "hubble",
        "caption": (
            "a telescope's deep look into space, with thousands of galaxies of different shapes and colors "
            "scattered over the black background"
        ),
        "source": "other",
        "level": 5,
        "references": _REFERENCES["hubble"],
    },
    {
        "image": "hubble",
        "caption": "we looked at the stars last night. it was beautiful.",
        "source": "glacnet",
        "level": 2,
    },
    # rocket
    {
        "image": "rocket",
        "caption": "a rocket on a launch pad",
        "source": "coco",
        "level": 4,
        "references": _REFERENCES["rocket"],
    },
    {
        "image": "rocket",
        "caption": (
            "A rocket waits for liftoff on the launch pad at dusk, lit by floodlights between tall lightning towers."
        ),
        "source": "coco",
        "level": 5,
        "references": _REFERENCES["rocket"],
    },
    {
        "image": "rocket",
        "caption": "a tall tower with lights at night",
        "source": "pythia",
        "level": 2,
        "references": _REFERENCES["rocket"],
    },
    {
        "image": "rocket",
        "caption": "The rocket was ready for launch. Everyone was so excited to see it go.",
        "source": "glacnet",
        "level": 3,
        "references": _REFERENCES["rocket"],
    },
    # motorcycle
    {
        "image": "motorcycle",
        "caption": "a red motorcycle parked in a garage",
        "source": "coco",
        "level": 4,
        "references": _REFERENCES["motorcycle"],
    },
    {
        "image": "motorcycle",
        "caption": "a motorcycle",
        "source": "pythia",
        "level": 3,
        "references": _REFERENCES["motorcycle"],
    },
    {
        "image": "motorcycle",
        "caption": "a red motorcycle parked on the side of a road",
        "source": "pythia",
        "level": 2,
        "references": _REFERENCES["motorcycle"],
    },
    {
        "image": "motorcycle",
        "caption": (
            "an old red yamaha kept in a home garage, standing on its kickstand in front of shelves full of "
            "boxes and tools"
        ),
        "source": "other",
        "level": 5,
        "references": _REFERENCES["motorcycle"],
    },
    {
        "image": "motorcycle",
        "caption": "a rocket on a launch pad at dusk",
        "source": "mismatched",
        "level": 1,
        "references": _REFERENCES["motorcycle"],
    },
    # moon
    {
        "image": "moon",
        "caption": "a black and white photo of the moon's surface",
        "source": "coco",
        "level": 3,
        "references": _REFERENCES["moon"],
    },
    {
        "image": "moon",
        "caption": "a gray wall with some dirty spots",
        "source": "pythia",
        "level": 1,
        "references": _REFERENCES["moon"],
    },
    {
        "image": "moon",
        "caption": (
            "close up of the lunar surface with a small bright crater near the top left and dark patches "
            "running down the middle"
        ),
        "source": "other",
        "level": 4,
        "references": _REFERENCES["moon"],
    },
    # retina
    {
        "image": "retina",
        "caption": "an orange ball",
        "source": "pythia",
        "level": 1,
        "references": _REFERENCES["retina"],
    },
    {
        "image": "retina",
        "caption": "a close up of an eye with blood vessels",
        "source": "coco",
        "level": 3,
        "references": _REFERENCES["retina"],
    },
    {
        "image": "retina",
        "caption": (
            "a retinal photo from an eye exam, showing the optic disc on the left, blood vessels branching out "
            "from it and the darker macula in the center"
        ),
        "source": "other",
        "level": 5,
        "references": _REFERENCES["retina"],
    },
    # page
    {
        "image": "page",
        "caption": "a page of text",
        "source": "pythia",
        "level": 3,
        "references": _REFERENCES["page"],
    },
    {
        "image": "page",
        "caption": (
            "a printed page titled region-based segmentation, with a paragraph of text and a line of code at the bottom"
        ),
        "source": "coco",
        "level": 4,
        "references": _REFERENCES["page"],
    },
    {
        "image": "page",
        "caption": "a sign on the wall of a building",
        "source": "pythia",
        "level": 1,
        "references": _REFERENCES["page"],
    },
    # clock (motion blurred: hard to tell what it is)
    {
        "image": "clock",
        "caption": "a blurry photo of a round object on a gray background",
        "source": "coco",
        "level": 2,
    },
    {
        "image": "clock",
        "caption": "a plate of food on a table",
        "source": "pythia",
        "level": 1,
    },
    # text
    {
        "image": "text",
        "caption": "handwritten math on paper",
        "source": "coco",
        "level": 3,
        "references": _REFERENCES["text"],
    },
    {
        "image": "text",
        "caption": "a chalkboard with writing on it",
        "source": "pythia",
        "level": 2,
        "references": _REFERENCES["text"],
    },
    {
        "image": "text",
        "caption": "Someone's math homework: handwritten equations on lined paper, photographed at a steep angle.",
        "source": "other",
        "level": 5,
        "references": _REFERENCES["text"],
    },
    # ihc
    {
        "image": "ihc",
        "caption": "a close up of a pizza",
        "source": "pythia",
        "level": 1,
        "references": _REFERENCES["ihc"],
    },
    {
        "image": "ihc",
        "caption": "a microscope image of brown stained tissue with blue cells between the brown areas",
        "source": "coco",
        "level": 4,
        "references": _REFERENCES["ihc"],
    },
    {
        "image": "ihc",
        "caption": "the cratered surface of the moon",
        "source": "mismatched",
        "level": 1,
        "references": _REFERENCES["ihc"],
    },
    # brick
    {
        "image": "brick",
        "caption": "a brick wall",
        "source": "coco",
        "level": 3,
    },
    {
        "image": "brick",
        "caption": "a wooden floor",
        "source": "pythia",
        "level": 1,
        "references": _REFERENCES["brick"],
    },
    {
        "image": "brick",
        "caption": "a tall building with many windows",
        "source": "pythia",
        "level": 1,
        "references": _REFERENCES["brick"],
    },
    # grass
    {
        "image": "grass",
        "caption": "close up of grass with some dry leaves on the ground",
        "source": "coco",
        "level": 4,
        "references": _REFERENCES["grass"],
    },
    {
        "image": "grass",
        "caption": "a field of green grass with a cow in it",
        "source": "pythia",
        "level": 2,
        "references": _REFERENCES["grass"],
    },
    # gravel
    {
        "image": "gravel",
        "caption": "a pile of rocks",
        "source": "pythia",
        "level": 3,
        "references": _REFERENCES["gravel"],
    },
    {
        "image": "gravel",
        "caption": "black and white close up of gravel covering the ground",
        "source": "coco",
        "level": 4,
        "references": _REFERENCES["gravel"],
    },
    # cell
    {
        "image": "cell",
        "caption": "a single cell seen under a microscope",
        "source": "coco",
        "level": 3,
    },
    {
        "image": "cell",
        "caption": "the full moon in the night sky",
        "source": "pythia",
        "level": 1,
    },
]
